/**
 * SSM Parameter Store (and KMS) on the same moto_server the S3 suites start (startMoto): one
 * server start, a second client. The test side reads, plants and describes parameters behind
 * baton's back, through the SDK and through the awscli an operator (or billet's docs) would use.
 */
import { execFileSync } from 'node:child_process';
import {
  DescribeParametersCommand,
  GetParameterCommand,
  GetParameterHistoryCommand,
  PutParameterCommand,
  SSMClient,
  type ParameterHistory,
  type ParameterMetadata,
} from '@aws-sdk/client-ssm';
import { SsmStore } from '../../src/store/ssm-store.js';
import { parseStoreUrl, type SsmStoreSpec } from '../../src/store/store-url.js';
import { MOTO_ENV, startMoto, uniqueName, type MotoS3 } from './moto-s3.js';

export interface MotoSsm {
  readonly moto: MotoS3;
  readonly endpoint: string;
  readonly client: SSMClient;
  /**
   * A fresh prefix under a parent of its own (`/baton-test/<unique>/deployment`): a document
   * another test published is never a neighbour of this one.
   */
  prefix(): string;
  /** `ssm:///<prefix>?region=us-east-1&endpoint=…` (through a proxy's endpoint when given). */
  storeUrl(prefix: string, options?: { readonly endpoint?: string; readonly query?: string }): string;
  /** A store on the URL with moto's keys and short bounds. */
  store(
    url: string,
    options?: { readonly maxAttempts?: number; readonly requestTimeoutMs?: number },
  ): SsmStore;
  /** The parameter's metadata (Type, KeyId, Tier, Version), or undefined. */
  describe(name: string): Promise<ParameterMetadata | undefined>;
  value(name: string): Promise<{ value: string; version: number } | undefined>;
  history(name: string): Promise<ParameterHistory[]>;
  /** A direct write (another controller, or billet), Overwrite=true. */
  put(name: string, value: string, options?: { readonly type?: 'String' | 'SecureString' }): Promise<number>;
  /** `aws ssm <args…>` against moto, its stdout. */
  aws(args: readonly string[]): string;
  close(): Promise<void>;
}

export async function startMotoSsm(): Promise<MotoSsm> {
  const moto = await startMoto();
  const client = new SSMClient({
    region: 'us-east-1',
    endpoint: moto.endpoint,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
  // moto builds its SSM backend on the first SSM request (seconds on a loaded machine): done
  // here, under the hook's timeout, so no test's first call runs into baton's request bound.
  await client.send(new DescribeParametersCommand({}));
  const stores: SsmStore[] = [];
  const aws = (args: readonly string[]) =>
    execFileSync('aws', ['--endpoint-url', moto.endpoint, '--region', 'us-east-1', ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...MOTO_ENV, AWS_DEFAULT_REGION: 'us-east-1', AWS_PAGER: '' },
    });
  return {
    moto,
    endpoint: moto.endpoint,
    client,
    prefix: () => `/baton-test/p${uniqueName()}/deployment`,
    storeUrl(prefix, options = {}) {
      const via = encodeURIComponent(options.endpoint ?? moto.endpoint);
      return `ssm://${prefix}?region=us-east-1&endpoint=${via}${options.query ? `&${options.query}` : ''}`;
    },
    store(url, options = {}) {
      const store = new SsmStore(parseStoreUrl(url) as SsmStoreSpec, {
        credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
        maxAttempts: options.maxAttempts ?? 2,
        connectionTimeoutMs: 2_000,
        // moto is Python: on a loaded machine one answer has taken over 10 s.
        requestTimeoutMs: options.requestTimeoutMs ?? 20_000,
      });
      stores.push(store);
      return store;
    },
    async describe(name) {
      const answer = await client.send(
        new DescribeParametersCommand({
          ParameterFilters: [{ Key: 'Name', Option: 'Equals', Values: [name] }],
        }),
      );
      return answer.Parameters?.[0];
    },
    async value(name) {
      try {
        const answer = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
        return { value: answer.Parameter!.Value!, version: answer.Parameter!.Version! };
      } catch (error) {
        if ((error as { name?: string }).name === 'ParameterNotFound') return undefined;
        throw error;
      }
    },
    async history(name) {
      const answer = await client.send(
        new GetParameterHistoryCommand({ Name: name, WithDecryption: true, MaxResults: 50 }),
      );
      return answer.Parameters ?? [];
    },
    async put(name, value, options = {}) {
      const answer = await client.send(
        new PutParameterCommand({
          Name: name,
          Value: value,
          Type: options.type ?? 'SecureString',
          Overwrite: true,
        }),
      );
      return answer.Version!;
    },
    aws,
    async close() {
      for (const store of stores) store.destroy();
      client.destroy();
      await moto.close();
    },
  };
}
