/**
 * An S3-compatible store on 127.0.0.1 for tests and the drill: s3rver in this process, a
 * random free port, its own directory, one bucket. Its stores are opened from an ordinary
 * `s3://` URL through the REAL S3 adapter and SDK, with the emulator's keys handed to the
 * adapter in-process (never in argv, the environment or the URL).
 *
 * s3rver IGNORES If-None-Match / If-Match (docs/testing.md): `baton store check` reports it as not
 * enforcing, and the conditional logic is proven on the fake and the directory store.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../store/open-store.js';
import type { S3Credentials, S3StoreOptions } from '../store/s3-store.js';
import type { Store } from '../store/store.js';

/**
 * s3rver's fixed, publicly documented emulator key pair — not a secret: it opens nothing but
 * this throw-away server on 127.0.0.1.
 */
export const S3RVER_CREDENTIALS: S3Credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface S3SandboxOptions {
  /** Where s3rver keeps its objects; a private temp dir (removed on close) when omitted. */
  readonly dir?: string;
  readonly bucket?: string;
  /** The prefix in the store URL ('' for none). */
  readonly prefix?: string;
}

export interface S3Sandbox {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  readonly bucket: string;
  /** `s3://<bucket>/<prefix>?region=us-east-1&endpoint=…&path_style=true` */
  readonly url: string;
  readonly credentials: S3Credentials;
  /** Opens `url` (this server's own by default, or another key on it) with the emulator's keys. */
  openStore(url?: string, options?: Omit<S3StoreOptions, 'credentials'>): Promise<Store>;
  close(): Promise<void>;
}

export async function startS3Sandbox(options: S3SandboxOptions = {}): Promise<S3Sandbox> {
  const { default: S3rver } = await import('s3rver');
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(path.join(os.tmpdir(), 'baton-s3-'));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const bucket = options.bucket ?? 'baton-sandbox';
  const prefix = options.prefix ?? 'authority';
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const query = new URLSearchParams({ region: 'us-east-1', endpoint, path_style: 'true' });
  const url = `s3://${bucket}/${prefix}?${query.toString()}`;
  let closed = false;
  return {
    endpoint,
    bucket,
    url,
    credentials: S3RVER_CREDENTIALS,
    openStore: (storeUrl = url, options = {}) =>
      openStore(storeUrl, { ...options, credentials: S3RVER_CREDENTIALS }),
    async close() {
      if (closed) return;
      closed = true;
      // Keep-alive sockets from an SDK client would hold close() open until they time out.
      (server as unknown as { httpServer?: Server }).httpServer?.closeAllConnections();
      await server.close();
      // close() removes the logger's transports; a response still being logged (a stream the
      // client abandoned) would then make winston complain on stderr, over a drill's screen.
      const logger = (server as unknown as { logger?: Record<string, unknown> }).logger;
      if (logger) for (const level of ['log', 'info', 'warn', 'error', 'debug']) logger[level] = () => logger;
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
