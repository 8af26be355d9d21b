/**
 * moto_server on 127.0.0.1 (the run's one, test/helpers/moto-run.ts, or the caller's own): a real
 * S3 API that baton did not write and that ENFORCES If-None-Match / If-Match (412), versioning and
 * SSE-KMS headers — what s3rver cannot prove (it ignores preconditions). Under CI=true a missing moto_server FAILS the suite
 * (a skipped proof would read as a passed one); elsewhere it fails too, with the install hint.
 *
 * The test-side client reads, plants and counts object versions behind baton's back.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { freePort } from '../../src/sandbox/free-port.js';
import { ONE_WRITE_AT_A_TIME, runMotoPort, waitForPort } from './moto-run.js';
import { registerChild, RUN_ENV } from './process-registry.js';

export interface MotoS3 {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  readonly client: S3Client;
  /** Env for a spawned baton (dummy credentials; moto accepts any). */
  readonly env: Record<string, string>;
  /** A new bucket (versioned when asked); DNS-valid, unique per call. */
  bucket(options?: { readonly versioned?: boolean }): Promise<string>;
  /** `s3://bucket/prefix?…` for baton, through `endpoint` (a proxy's, when given). */
  storeUrl(
    bucket: string,
    prefix: string,
    options?: { readonly endpoint?: string; readonly query?: string },
  ): string;
  getObject(
    bucket: string,
    key: string,
  ): Promise<{ body: Uint8Array; etag: string; sse?: string } | undefined>;
  putObject(bucket: string, key: string, body: Uint8Array): Promise<string>;
  deleteObject(bucket: string, key: string): Promise<void>;
  /** Every version (and delete marker) of every key under `prefix`. */
  versions(
    bucket: string,
    prefix?: string,
  ): Promise<{ key: string; versionId: string; deleteMarker: boolean }[]>;
  close(): Promise<void>;
}

export const MOTO_ENV: Record<string, string> = {
  AWS_ACCESS_KEY_ID: 'testing',
  AWS_SECRET_ACCESS_KEY: 'testing',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** Throws (never skips) when moto_server is not on PATH, saying how to get it. */
export function requireMoto(): void {
  const found = spawnSync('sh', ['-c', 'command -v moto_server'], { encoding: 'utf8' });
  if (found.status !== 0) {
    throw new Error(
      `moto_server is not on PATH${process.env.CI === 'true' ? ' (CI=true: this suite must run, not skip)' : ''}. ` +
        "Install it with `pip install 'moto[server]'`: these tests prove conditional writes against a real S3 API.",
    );
  }
}

let motoPython: string | undefined;

/**
 * The Python that moto_server runs on: the interpreter its console script names (pip writes a
 * `#!…/python` line), else the one a pyenv shim resolves to, else `python3` — the first that
 * imports moto's server. moto runs under the launcher beside this file, which applies its
 * state-changing requests one at a time (why: that file's doc comment).
 */
function pythonWithMoto(): string {
  if (motoPython) return motoPython;
  const candidates: string[] = [];
  const script = spawnSync('sh', ['-c', 'command -v moto_server; pyenv which moto_server 2>/dev/null'], {
    encoding: 'utf8',
  }).stdout;
  for (const path of script.split('\n').filter(Boolean)) {
    const first = readFileSync(path, 'utf8').split('\n', 1)[0] ?? '';
    const shebang = /^#!\s*(\S*python\S*)\s*$/.exec(first);
    if (shebang?.[1]) candidates.push(shebang[1]);
  }
  candidates.push('python3');
  for (const python of candidates) {
    const probe = spawnSync(python, ['-c', 'import moto.moto_server.werkzeug_app, werkzeug.serving'], {
      stdio: 'ignore',
    });
    if (probe.status === 0) return (motoPython = python);
  }
  throw new Error(
    `moto_server is on PATH but no Python that imports moto's server was found (tried ${candidates.join(', ')}). ` +
      "Install it with `pip install 'moto[server]'` into the Python that runs moto_server.",
  );
}

let nameSeq = 0;

/** A name no other file of the run (they share one moto) and no earlier test of this one uses. */
export function uniqueName(): string {
  return `${process.pid}-${++nameSeq}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/**
 * Within a suite run (the global setup's run directory), the run's one moto_server
 * (test/helpers/moto-run.ts): every file keeps to its own buckets and parameters, and close() ends
 * only this file's client. `own: true` starts a server for this caller alone, for a test that stops
 * it (an outage); so does a use outside a suite run, and every caller when BATON_TEST_MOTO_PER_FILE=1
 * (how the shared server's saving is measured: docs/testing.md, "Suite time").
 */
export async function startMoto(options: { readonly own?: boolean } = {}): Promise<MotoS3> {
  requireMoto();
  Object.assign(process.env, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
  const run = process.env[RUN_ENV];
  if (!options.own && run !== undefined && process.env.BATON_TEST_MOTO_PER_FILE !== '1')
    return motoClient(await runMotoPort(run, pythonWithMoto()), () => Promise.resolve());
  const port = await freePort();
  const child = spawn(pythonWithMoto(), [ONE_WRITE_AT_A_TIME, '127.0.0.1', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  registerChild(child, 'moto_server');
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await waitForPort(port, child, Date.now() + 90_000);
  } catch (error) {
    child.kill('SIGTERM');
    throw new Error(`${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return motoClient(port, async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if ((child.exitCode as number | null) === null) child.kill('SIGKILL');
    }
  });
}

function motoClient(port: number, stop: () => Promise<void>): MotoS3 {
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    endpoint,
    client,
    env: { ...MOTO_ENV },
    async bucket(options = {}) {
      const name = `baton-${uniqueName()}`;
      await client.send(new CreateBucketCommand({ Bucket: name }));
      if (options.versioned) {
        await client.send(
          new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: 'Enabled' } }),
        );
      }
      return name;
    },
    storeUrl(bucket, prefix, options = {}) {
      const via = encodeURIComponent(options.endpoint ?? endpoint);
      return `s3://${bucket}/${prefix}?region=us-east-1&endpoint=${via}&path_style=true${options.query ? `&${options.query}` : ''}`;
    },
    async getObject(bucket, key) {
      try {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return {
          body: await answer.Body!.transformToByteArray(),
          etag: answer.ETag ?? '',
          ...(answer.ServerSideEncryption ? { sse: answer.ServerSideEncryption } : {}),
        };
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    async putObject(bucket, key, body) {
      const answer = await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length }),
      );
      return answer.ETag ?? '';
    },
    async deleteObject(bucket, key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async versions(bucket, prefix) {
      const answer = await client.send(
        new ListObjectVersionsCommand({ Bucket: bucket, ...(prefix ? { Prefix: prefix } : {}) }),
      );
      return [
        ...(answer.Versions ?? []).map((v) => ({
          key: v.Key!,
          versionId: v.VersionId!,
          deleteMarker: false,
        })),
        ...(answer.DeleteMarkers ?? []).map((v) => ({
          key: v.Key!,
          versionId: v.VersionId!,
          deleteMarker: true,
        })),
      ];
    },
    async close() {
      client.destroy();
      await stop();
    },
  };
}
