/**
 * A pgbouncer that keeps its logins in an auth_file on ANOTHER machine than its provider
 * (docs/mesh-rotation.md, "A pooler on another machine"; issue 45). No provisioner runs there,
 * so baton keeps the file itself, as a step of the test login — which every path that moves a
 * consumer passes (the rotation's gate, the roll-back that finishes a pair, `mesh resume`,
 * `mesh rollback`): after the receipt and BEFORE the login through the pooler, the login's line
 * gets the verifier the provisioner applied (read from the provider's machine: the database's
 * own string, salt included — pgbouncer logs in to PostgreSQL with it — never a password), then
 * RELOAD on the pooler's admin console, reached from the pooler's machine. A login that is then
 * refused puts the old line back (and RELOAD): the roll-back that follows re-applies the old
 * credential with the very verifier it had (src/provisioner/applied-verifiers.ts), so the old
 * line matches the database again.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { appliedVerifierPath, parseAppliedVerifiers } from './applied-verifier.js';
import type { SecretDigest } from './digest.js';
import type { Pooler, ProviderConnect } from './inventory.js';
import { authLineSecret, authLineUser, withAuthLine } from './pooler-auth-line.js';
import type { PlannedPair } from './rotation-plan.js';
import { scramLogin } from './scram-login.js';
import type { TestLoginResult } from './test-login-result.js';
import { reasonOf, type TransportFor } from './transport.js';

/** What the step did: the line given (undo() puts the old one back), or why it could not. */
export type PoolerGiven =
  { readonly ok: true; undo(): Promise<void> } | { readonly ok: false; readonly reason: string };

export interface PoolerKeeper {
  /**
   * For a pair whose test login goes through an auth_file pooler on another machine than its
   * provider: gives the pooler the verifier applied for `digest`. Undefined for any other pair
   * (no pooler, auth_query, or a pooler beside the database: its provisioner keeps the file).
   */
  give(
    pair: Pick<PlannedPair, 'providerMachine' | 'providerPath' | 'role' | 'login'>,
    connect: Pick<ProviderConnect, 'pooler'>,
    digest: SecretDigest,
    transportFor: TransportFor,
  ): Promise<PoolerGiven> | undefined;
}

/** A pooler the controller keeps: auth_file, on another machine than `providerMachine`. */
export function isRemoteAuthFile(
  pooler: Pick<Pooler, 'auth' | 'machine'>,
  providerMachine: string,
): pooler is Pooler & { auth: { mode: 'auth_file'; file: string } } {
  return pooler.auth.mode === 'auth_file' && pooler.machine !== providerMachine;
}

/** How many times a compare-and-swap is tried again when another writer changed the file in between. */
const SWAP_TRIES = 4;

export function poolerKeeper(poolers: readonly Pooler[]): PoolerKeeper {
  /** One edit of a pooler's file at a time from this process: the pairs of one batch share it. */
  const queues = new Map<string, Promise<unknown>>();
  const serial = <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const run = (queues.get(key) ?? Promise.resolve()).then(work, work);
    queues.set(
      key,
      run.catch(() => undefined),
    );
    return run;
  };
  return {
    give(pair, connect, digest, transportFor) {
      const pooler = poolers.find((p) => p.name === connect.pooler);
      if (!pooler || !isRemoteAuthFile(pooler, pair.providerMachine)) return undefined;
      const login = pair.login?.role ?? pair.role;
      const file = pooler.auth.file;
      const at = `pooler ${pooler.name} on ${pooler.machine}`;
      const key = `${pooler.machine}\0${file}`;
      return (async (): Promise<PoolerGiven> => {
        // The verifier the database holds for this credential, as its provisioner recorded it.
        const recorded = appliedVerifierPath(path.posix.dirname(pair.providerPath), login);
        let verifier: string | undefined;
        try {
          const provider = transportFor(pair.providerMachine);
          if (!provider.readWholeText)
            return { ok: false, reason: `the transport of ${pair.providerMachine} cannot read whole files` };
          const text = await provider.readWholeText(recorded);
          verifier = parseAppliedVerifiers(text?.text ?? '').find((v) => v.digest === digest)?.verifier;
        } catch (error) {
          return {
            ok: false,
            reason: `the verifier for ${at} could not be read on ${pair.providerMachine} (${reasonOf(error)})`,
          };
        }
        if (verifier === undefined)
          return {
            ok: false,
            reason: `${pair.providerMachine}'s provisioner has not recorded the verifier of the new credential of ${login} (${recorded}; a provisioner older than baton's round 10 records none), so ${at} was not given it and its auth_file ${file} was not changed`,
          };
        let before: string | undefined;
        try {
          before = await serial(key, async () => {
            const old = await setLine(transportFor, pooler, login, verifier);
            try {
              await reload(transportFor, pooler);
            } catch (error) {
              // Not reloaded: the file goes back to the line pgbouncer still holds in memory.
              if (old !== undefined)
                await setLine(transportFor, pooler, login, old, verifier).catch(() => undefined);
              throw error;
            }
            return old;
          });
        } catch (error) {
          return { ok: false, reason: `${at}: ${reasonOf(error)}` };
        }
        const given = verifier;
        return {
          ok: true,
          // Only our own line is taken back: a line another writer put there since is theirs.
          undo: () =>
            serial(key, async () => {
              if (before === undefined) return;
              const now = await setLine(transportFor, pooler, login, before, given);
              if (now === given) await reload(transportFor, pooler);
            }),
        };
      })();
    },
  };
}

/**
 * Sets `login`'s secret in the pooler's auth_file to `secret` (only while it is `onlyIf`, when
 * given) by compare-and-swap, every other line kept byte for byte. Resolves with the secret the
 * line held before (undefined: no line).
 */
async function setLine(
  transportFor: TransportFor,
  pooler: Pooler & { auth: { mode: 'auth_file'; file: string } },
  login: string,
  secret: string,
  onlyIf?: string,
): Promise<string | undefined> {
  const machine = transportFor(pooler.machine);
  const file = pooler.auth.file;
  if (!machine.readWholeText || !machine.swapText)
    throw new Error(`the transport of ${pooler.machine} cannot edit whole files`);
  for (let i = 0; i < SWAP_TRIES; i++) {
    const read = await machine.readWholeText(file);
    if (read === undefined) throw new Error(`its auth_file ${file} is not there`);
    const line = read.text.split('\n').find((l) => authLineUser(l) === login);
    const before = line === undefined ? undefined : authLineSecret(line);
    if (onlyIf !== undefined && before !== onlyIf) return before;
    if (before === secret) return before;
    if (await machine.swapText(file, read.sha256, withAuthLine(read.text, login, secret))) return before;
  }
  throw new Error(`its auth_file ${file} kept changing while baton edited it (${SWAP_TRIES} tries)`);
}

/** RELOAD on the admin console, reached from the pooler's machine, as the inventory's admin user. */
async function reload(transportFor: TransportFor, pooler: Pooler): Promise<void> {
  const admin = pooler.admin;
  if (!admin?.passwordFile) throw new Error('the inventory names no admin: password_file for its RELOAD');
  const password = adminPassword(admin.passwordFile);
  const machine = transportFor(pooler.machine);
  if (!machine.openStream) throw new Error(`the transport of ${pooler.machine} cannot open a stream`);
  const until = AbortSignal.timeout(RELOAD_TIMEOUT_MS);
  const stream = await machine.openStream(admin.host, admin.port, until);
  stream.on('error', () => undefined);
  stream.connect(admin.port, admin.host);
  try {
    const result = await scramLogin(
      stream,
      { user: admin.user, database: 'pgbouncer', applicationName: 'baton', password, query: 'RELOAD' },
      until,
    );
    if (!result.ok)
      throw new Error(
        `RELOAD on its admin console ${admin.user}@${admin.host}:${admin.port} was refused: ${result.reason}${result.code ? ` (SQLSTATE ${result.code})` : ''}`,
      );
  } finally {
    stream.destroy();
  }
}

/** How long the admin console may take to log in and answer RELOAD. */
const RELOAD_TIMEOUT_MS = 15_000;

/** The admin user's password from its 0600 file on this host (never in argv, env or a log). */
function adminPassword(file: string): string {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (error) {
    throw new Error(`its admin password_file ${file} cannot be read (${(error as Error).message})`, {
      cause: error,
    });
  }
  if ((mode & 0o077) !== 0)
    throw new Error(
      `its admin password_file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`,
    );
  return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
}

/**
 * After a roll-back: each line a passed test login left whose consumer did NOT move (its commit
 * failed, the wait ended first) is taken back — the provider is being put back on the old
 * credential, whose verifier is the old line's. Moved or not is the consumer machine's truth:
 * its live end names the new login (alternating) or holds the new credential (single). Best
 * effort: an undo or a read that fails leaves the line, which the next rotation writes again.
 */
export async function takeBackUnmoved(
  lines: readonly {
    readonly pair: Pick<PlannedPair, 'consumerMachine' | 'consumerPath' | 'login'>;
    readonly digest: SecretDigest;
    readonly undo: () => Promise<void>;
  }[],
  transportFor: TransportFor,
): Promise<void> {
  await Promise.all(
    lines.map(async ({ pair, digest, undo }) => {
      try {
        const [end] = await transportFor(pair.consumerMachine).digests([pair.consumerPath]);
        const moved = pair.login ? end?.liveLogin === pair.login.role : end?.live === digest;
        if (!moved) await undo();
      } catch {
        // Left as it is: see above.
      }
    }),
  );
}

/**
 * A roll-back started from what was read (`mesh rollback` after baton died between a passed test
 * login and its own roll-back): the run that gave the pooler its line is gone, and with it the
 * undo, so each pair taken back gets its previous credential's recorded verifier again — the one
 * its provisioner re-applies — or the pooler would refuse the old password until the next
 * rotation. A pair with no previous credential (a first delivery) is left. Best effort, like
 * takeBackUnmoved: what could not be given is said by the next test login through the pooler.
 */
export async function giveBackPrevious(
  keeper: PoolerKeeper,
  taken: readonly {
    readonly pair: Pick<PlannedPair, 'providerMachine' | 'providerPath' | 'role' | 'login'>;
    readonly connect: Pick<ProviderConnect, 'pooler'> | undefined;
    readonly previous: SecretDigest | undefined;
  }[],
  transportFor: TransportFor,
): Promise<void> {
  await Promise.all(
    taken.map(async ({ pair, connect, previous }) => {
      if (connect && previous) await keeper.give(pair, connect, previous, transportFor);
    }),
  );
}

/**
 * The test login of `pair` with its pooler step around it, for every path that moves a consumer:
 * the verifier given to a pooler the controller keeps before `login` runs (a pooler that could
 * not be given it refuses the login with the reason, nothing tried), and the old line put back
 * when the login was refused and the consumer did not move (`moved`, read after the login).
 */
export async function loginThroughPooler(
  keeper: PoolerKeeper | undefined,
  step: {
    readonly pair: Pick<PlannedPair, 'providerMachine' | 'providerPath' | 'role' | 'login'>;
    readonly connect: Pick<ProviderConnect, 'pooler'>;
    readonly digest: SecretDigest | undefined;
    readonly transportFor: TransportFor;
  },
  login: () => Promise<TestLoginResult>,
  moved: () => Promise<boolean> | boolean = () => false,
  /** Called with the step's undo when the line stays (the login passed, or the consumer moved). */
  stays?: (undo: () => Promise<void>) => void,
): Promise<TestLoginResult> {
  const given =
    step.digest === undefined
      ? undefined
      : keeper?.give(step.pair, step.connect, step.digest, step.transportFor);
  const outcome = await given;
  if (outcome && !outcome.ok) return { ok: false, ms: 0, reason: outcome.reason, poolerStep: true };
  const result = await login();
  if (!outcome) return result;
  if (result.ok || (await moved())) {
    stays?.(() => outcome.undo());
    return result;
  }
  // Said with the refusal: a line not put back refuses the old password through the pooler too.
  const undone = await outcome.undo().then(
    () => undefined,
    (error: unknown) => reasonOf(error),
  );
  return undone === undefined
    ? result
    : { ...result, reason: `${result.reason}; and the pooler's old line could not be put back (${undone})` };
}
