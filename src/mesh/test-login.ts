/**
 * The test login (docs/mesh-rotation.md "Testing the new credential from the consumer"): after a
 * pair's receipt and BEFORE its consumer end is committed, baton logs in with the new
 * credential from the consumer's machine — a TCP stream opened there (transport.openStream: an
 * ssh `direct-tcpip` channel on the shared connection), spoken to by baton's own PostgreSQL
 * client. So a `pg_hba.conf` line, a CONNECTION LIMIT or a firewall that would refuse the
 * consumer refuses baton first, and the consumer is not moved onto a login it cannot use.
 *
 * Only SCRAM is spoken: a server that asks for the password in clear or as MD5 is refused
 * before the password is handed over, so the secret never leaves this process in any form a
 * listener could replay.
 */
import type { ProviderConnect } from './inventory.js';
import type { ReloadOutcome } from './reload.js';
import { TEST_LOGIN_APPLICATION } from './session-record.js';
import type { BoundTransport } from './transport.js';
import { reasonOf } from './transport.js';

export type TestLoginResult =
  | { readonly ok: true; readonly ms: number }
  | {
      readonly ok: false;
      readonly ms: number;
      /** The server's own words (or the network's), raw: shown only through outside-text. */
      readonly reason: string;
      /** PostgreSQL's SQLSTATE when the server refused (28000: pg_hba or NOLOGIN, 28P01, 53300…). */
      readonly code?: string;
    };

/** How long a test login may take, start to end, when the caller gives no bound. */
export const TEST_LOGIN_TIMEOUT_MS = 10_000;

export async function testLogin(
  transport: BoundTransport,
  connect: ProviderConnect,
  user: string,
  password: string,
  timeoutMs = TEST_LOGIN_TIMEOUT_MS,
): Promise<TestLoginResult> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  if (!transport.openStream)
    return {
      ok: false,
      ms: 0,
      reason: `the transport of ${transport.machine} cannot open a stream from the machine`,
    };
  const until = new AbortController();
  const timer = setTimeout(() => until.abort(new Error(`no login within ${timeoutMs / 1000} s`)), timeoutMs);
  try {
    const stream = await transport.openStream(connect.host, connect.port, until.signal);
    const { default: pg } = await import('pg');
    let method: 'sasl' | 'other' | undefined;
    const client = new pg.Client({
      host: connect.host,
      port: connect.port,
      database: connect.database,
      user,
      // A function, asked only once the server says how it wants the password: SCRAM or nothing.
      password: () => {
        if (method !== 'sasl')
          throw new Error(
            'the server asked for the password in clear or as MD5; baton tries logins only with SCRAM',
          );
        return password;
      },
      stream: () => stream,
      ssl: false,
      connectionTimeoutMillis: timeoutMs,
      application_name: TEST_LOGIN_APPLICATION,
    });
    // Registered before connect(), so before the client's own handlers: the method is known first.
    const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
    connection.on('authenticationSASL', () => (method ??= 'sasl'));
    connection.on('authenticationCleartextPassword', () => (method = 'other'));
    connection.on('authenticationMD5Password', () => (method = 'other'));
    client.on('error', () => undefined);
    try {
      await Promise.race([
        client.connect(),
        new Promise((_, reject) =>
          until.signal.addEventListener('abort', () => reject(until.signal.reason as Error), { once: true }),
        ),
      ]);
      return { ok: true, ms: ms() };
    } finally {
      await client.end().catch(() => undefined);
      stream.destroy();
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ok: false,
      ms: ms(),
      reason: reasonOf(error),
      ...(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? { code } : {}),
    };
  } finally {
    clearTimeout(timer);
    until.abort();
  }
}

/** One test login as a rotation keeps it (journal, summary, `--json`): names and the server's words, never the secret. */
export interface TestLoginRecord {
  readonly pair: string;
  /** The machine it was tried from: the consumer's. */
  readonly machine: string;
  readonly login: string;
  readonly ok: boolean;
  readonly ms: number;
  readonly reason?: string;
  readonly code?: string;
}

/** What a rotation learned about its consumers' apps: their test logins and reloads. */
export interface AppResults {
  readonly testLogins: readonly TestLoginRecord[];
  readonly reloads: readonly ReloadOutcome[];
}
