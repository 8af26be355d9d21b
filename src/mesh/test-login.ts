/**
 * The test login (docs/mesh-rotation.md "Testing the new credential from the consumer"): after a
 * pair's receipt and BEFORE its consumer end is committed, baton logs in with the new
 * credential from the consumer's machine — a TCP stream opened there (transport.openStream: an
 * ssh `direct-tcpip` channel on the shared connection), spoken to by baton's own PostgreSQL
 * client. So a `pg_hba.conf` line, a CONNECTION LIMIT or a firewall that would refuse the
 * consumer refuses baton first, and the consumer is not moved onto a login it cannot use.
 *
 * Only SCRAM is spoken (scram-login.ts): a server that asks for the password in clear or as
 * MD5 is refused before the password is handed over, so the secret never leaves this process
 * in any form a listener could replay. The stream is opened while the receipt is awaited
 * (preopenStream), so after the receipt the login costs SCRAM's two round trips and nothing more.
 */
import type { ProviderConnect } from './inventory.js';
import type { ReloadOutcome } from './reload.js';
import { scramLogin } from './scram-login.js';
import { TEST_LOGIN_APPLICATION } from './session-record.js';
import type { BoundRenameChannel, BoundTransport, MachineStream, RelayedSocket } from './transport.js';
import { reasonOf } from './transport.js';
import type { TestLoginResult } from './test-login-result.js';

export type { TestLoginResult } from './test-login-result.js';

/** How long a test login may take, start to end, when the caller gives no bound. */
export const TEST_LOGIN_TIMEOUT_MS = 10_000;

/**
 * A stream from the consumer's machine to `connect:`, opened while baton waits for the receipt
 * so that no channel set-up (an `ssh -W` process, the channel's open on the shared connection,
 * the far side's TCP handshake) is left between the receipt and the consumer's move. It carries
 * nothing until the receipt: PostgreSQL says nothing before the client's startup, and an unused
 * connection closed without a byte leaves no line in its log. close() ends it (and its ssh).
 */
export interface PreopenedStream {
  /** The stream, once; undefined when it could not be opened or was already taken or closed. */
  take(): Promise<MachineStream | undefined>;
  /** Ends the stream if nobody took it; safe to call twice. */
  close(): void;
}

export function preopenStream(
  transport: BoundTransport,
  connect: ProviderConnect,
  /** app-rtt: the machine's rename channel; where it relays, the stream is one of its sockets (no `ssh -W`). */
  channel?: Promise<BoundRenameChannel | undefined>,
): PreopenedStream {
  const life = new AbortController();
  let taken = false;
  const viaSsh = (): Promise<MachineStream | undefined> =>
    transport.openStream
      ? transport.openStream(connect.host, connect.port, life.signal).then(
          (stream) => {
            // Until it is used, a failure on it is only "not usable": the login opens another.
            stream.on('error', () => undefined);
            stream.connect(connect.port, connect.host);
            if (life.signal.aborted) stream.destroy();
            return stream;
          },
          () => undefined,
        )
      : Promise.resolve(undefined);
  const opening: Promise<MachineStream | undefined> = (async () => {
    const relay = (await channel)?.relay;
    if (relay && !life.signal.aborted) {
      const socket = await relay.openSocket(connect.host, connect.port, life.signal).catch(() => undefined);
      if (socket) {
        socket.on('error', () => undefined);
        return socket;
      }
    }
    // No relay on the machine (no perl, the local transport) or it could not connect: as before.
    return life.signal.aborted ? undefined : viaSsh();
  })();
  return {
    async take() {
      if (taken || life.signal.aborted) return undefined;
      taken = true;
      const stream = await opening;
      return stream && !stream.destroyed && stream.writable ? stream : undefined;
    },
    close() {
      if (life.signal.aborted) return;
      life.abort(new Error('the pre-opened stream was not needed'));
      void opening.then((stream) => (taken ? undefined : stream?.destroy()));
    },
  };
}

/**
 * Logs in as `user` with `password` from the transport's machine. With `preopened`, on that
 * stream (the login then costs only its two SCRAM round trips); if that stream turns out dead
 * (closed while it waited), once more on a new one.
 */
export async function testLogin(
  transport: BoundTransport,
  connect: ProviderConnect,
  user: string,
  password: string,
  timeoutMs = TEST_LOGIN_TIMEOUT_MS,
  preopened?: PreopenedStream,
  /** app-rtt: called with each stream just before the login's first byte (the gate arms a commit on a relayed one). */
  beforeLogin?: (stream: MachineStream) => void,
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
  const request = {
    user,
    database: connect.database,
    applicationName: TEST_LOGIN_APPLICATION,
    password,
  };
  const fresh = async () => {
    const stream = await transport.openStream!(connect.host, connect.port, until.signal);
    // The login listens from its first step; until then a failure is kept on the stream (errored).
    stream.on('error', () => undefined);
    stream.connect(connect.port, connect.host);
    return stream;
  };
  const loginOn = async (stream: MachineStream): Promise<TestLoginResult> => {
    try {
      beforeLogin?.(stream);
      const result = await scramLogin(stream, request, until.signal);
      return result.ok
        ? { ok: true, ms: ms(), roundTrips: result.roundTrips }
        : {
            ok: false,
            ms: ms(),
            reason: result.reason,
            ...(result.code ? { code: result.code } : {}),
            roundTrips: result.roundTrips,
          };
    } finally {
      stream.destroy();
    }
  };
  try {
    const ready = await preopened?.take();
    if (ready) {
      try {
        return await loginOn(ready);
      } catch (error) {
        // The waiting stream had died (the server's authentication_timeout, the machine's network):
        // not a verdict on the credential, so it is tried once on a new stream.
        if (until.signal.aborted) throw error;
      }
    }
    return await loginOn(await fresh());
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
  /** The pooler it went through (`connect: { pooler: … }`): a refusal's advice names it. */
  readonly pooler?: string;
  /** Refused by the pooler step, before the login: baton could not give the pooler the new verifier. */
  readonly pooler_step?: true;
  readonly ok: boolean;
  readonly ms: number;
  readonly reason?: string;
  readonly code?: string;
  /** Round trips after the receipt the login itself took (2 with SCRAM: scram-login.ts). */
  readonly round_trips?: number;
  /**
   * app-rtt: true when the consumer end was renamed by the machine on this login's own
   * ReadyForQuery (a commit armed on the relayed connection): the rename cost no round trip.
   */
  readonly renamed_with_login?: boolean;
}

/**
 * The one record of a test login, for every path that moves a consumer (the rotation's gate, the
 * roll-back's login before it finishes a pair, `mesh resume` and `mesh rollback`): built in one
 * place so that every path records the pooler the login went through, whose name a refusal's
 * advice and `mesh status` need (a later command's copy once dropped it).
 */
export function testLoginRecord(
  pair: { readonly key: string; readonly consumerMachine: string },
  login: string,
  connect: Pick<ProviderConnect, 'pooler'>,
  result: TestLoginResult,
  renamedWithLogin = false,
): TestLoginRecord {
  return {
    pair: pair.key,
    machine: pair.consumerMachine,
    login,
    ok: result.ok,
    ms: result.ms,
    ...(result.roundTrips === undefined ? {} : { round_trips: result.roundTrips }),
    ...(renamedWithLogin ? { renamed_with_login: true } : {}),
    ...(connect.pooler === undefined ? {} : { pooler: connect.pooler }),
    ...(result.ok
      ? {}
      : {
          reason: result.reason,
          ...(result.code ? { code: result.code } : {}),
          ...(result.poolerStep ? { pooler_step: true as const } : {}),
        }),
  };
}

/** A stream that is a socket of a rename channel's relay (and can carry an armed commit). */
export function isRelayed(stream: MachineStream): stream is RelayedSocket {
  return typeof (stream as Partial<RelayedSocket>).arm === 'function';
}

/** What a rotation learned about its consumers' apps: their test logins and reloads. */
export interface AppResults {
  readonly testLogins: readonly TestLoginRecord[];
  readonly reloads: readonly ReloadOutcome[];
}
