/**
 * The project's s3rver sandbox (src/sandbox/s3.ts) plus a test-side S3 client, so a test can
 * look at — or plant — the raw object behind baton's back: what a second controller, or an
 * attacker with write access to the bucket, would see and do.
 */
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { unenforcedOverrideValue } from '../../src/share/store-guard.js';

/**
 * s3rver ignores If-None-Match and If-Match, so baton refuses to publish to it unless told so
 * on purpose: the global flag with the value bound to this exact store URL. Tests whose subject
 * is not conditional writes pass it; the ones about them use moto.
 */
export function unenforcedStoreFlags(storeUrl: string): string[] {
  return ['--store-unenforced', unenforcedOverrideValue(storeUrl)];
}

export interface TestS3 {
  readonly sandbox: S3Sandbox;
  readonly endpoint: string;
  readonly bucket: string;
  /** The raw object, or undefined when there is none. */
  getObject(key: string): Promise<Uint8Array | undefined>;
  putObject(key: string, body: Uint8Array): Promise<void>;
  /** Streams `bytes` from `chunks` without ever holding them all. */
  putStream(key: string, bytes: number, chunks: () => Iterable<Uint8Array>): Promise<void>;
  deleteObject(key: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTestS3(dir: string, bucket: string): Promise<TestS3> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const sandbox = await startS3Sandbox({ dir, bucket, prefix: '' });
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: sandbox.endpoint,
    forcePathStyle: true,
    credentials: { ...sandbox.credentials },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    sandbox,
    endpoint: sandbox.endpoint,
    bucket,
    async getObject(key) {
      try {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return await answer.Body!.transformToByteArray();
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    async putObject(key, body) {
      await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length }),
      );
    },
    async putStream(key, bytes, chunks) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: Readable.from(chunks()),
          ContentLength: bytes,
        }),
      );
    },
    async deleteObject(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async close() {
      client.destroy();
      await sandbox.close();
    },
  };
}
