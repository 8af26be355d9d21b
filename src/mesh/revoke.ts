/**
 * Revoking the login an alternating rotation moved its consumer away from (`mesh rotate
 * --revoke-previous`, docs/mesh-rotation.md "Revoking the previous login"): the left login's
 * provider file gets a fresh secret that is delivered NOWHERE else, so once the provisioner
 * has applied it the password the consumer used to hold is refused. Nothing is rolled back
 * here: a revoke that is not confirmed is reported as such, since the old password may then
 * still work.
 *
 * The login's open sessions are named from its receipt; with `endSessions` a request file
 * (`provides/P/.end-sessions/R+x`, the digest of the fresh secret) asks the provisioner to end
 * them once it has applied exactly that secret. Only digests and session metadata leave here.
 */
import path from 'node:path';
import { nextStep, type Said } from '../next-step.js';
import { awaitReceipts, groupBy, type ApplyWait } from './delivery.js';
import {
  digestPrefix,
  END_SESSIONS_DIR,
  parseReceipt,
  type LoginSession,
  type SecretDigest,
} from './digest.js';
import { mapBounded } from './map-bounded.js';
import type { PlannedPair } from './rotation-plan.js';
import { Secret } from './secret.js';
import { reasonOf, type StagedFile, type TransportFor } from './transport.js';

/** One login the consumer left, to be revoked. */
export interface LeftLogin {
  /** The pair's key (`provider:consumer`). */
  readonly pair: string;
  /** The consumer, for the next step (`mesh rotate --pair provider:consumer`). */
  readonly provider: string;
  readonly consumer: string;
  readonly providerMachine: string;
  /** The login role, e.g. `web1_app_a`. */
  readonly login: string;
  /** The left login's provider file, `…/provides/P/R+x`. */
  readonly providerPath: string;
  /** Its receipt, `…/provides/P/.applied/R+x`. */
  readonly receiptPath: string;
}

/** The left login of every alternating pair that has one (`PlannedPair.login.left`). */
export function leftLogins(pairs: readonly PlannedPair[]): LeftLogin[] {
  return pairs.flatMap((p) => {
    const left = p.login?.left;
    return left
      ? [
          {
            pair: p.key,
            provider: p.provider,
            consumer: p.consumer,
            providerMachine: p.providerMachine,
            login: left.role,
            providerPath: left.providerPath,
            receiptPath: left.receiptPath,
          },
        ]
      : [];
  });
}

/** `…/provides/P/R+x` → `…/provides/P/.end-sessions/R+x`. */
export function endSessionsPath(providerPath: string): string {
  return path.posix.join(
    path.posix.dirname(providerPath),
    END_SESSIONS_DIR,
    path.posix.basename(providerPath),
  );
}

/** A session the provisioner found open for a login (never a password, never a query). */
export type OpenSession = LoginSession;

export type PairRevoke =
  /** The provisioner confirmed the fresh secret: the old password is refused for new connections. */
  | {
      readonly pair: string;
      readonly login: string;
      readonly revoked: true;
      readonly sessions: readonly OpenSession[];
      readonly endedSessions?: number;
    }
  /** Not confirmed: `reason` says why, and that the old password may still work; `next` what to do. */
  | {
      readonly pair: string;
      readonly login: string;
      readonly revoked: false;
      readonly reason: string;
      readonly next: Said;
      /**
       * The fresh secret's digest prefix, once it was named to the journal (beforeStage): the
       * journal keeps it, and `mesh status` reads the left login's files against it — live and
       * confirmed by a later receipt (revoked), live (armed), or not live (not revoked).
       */
      readonly target?: string;
      /** Its commit returned: the fresh secret is live, so the request stays armed until the provisioner applies it. */
      readonly armed?: true;
    };

export interface RevokeOptions extends ApplyWait {
  /** Also ask the provisioner to end the login's open sessions. */
  readonly endSessions: boolean;
  /**
   * Given each left login's target (pair key → the fresh secret's digest prefix) before anything
   * is staged; the rotation journals them. Without that record, a baton killed during the revoke
   * left a staged `.next` that status called a stray (its suggested rotate refused it: a loop) and
   * a live fresh secret it called `valid`. If it throws, nothing is staged.
   */
  readonly beforeStage?: (targets: ReadonlyMap<string, string>) => Promise<void>;
}

/**
 * Revokes each left login: per provider machine in one batch, stage the fresh secrets (and the
 * end-sessions requests), keep the previous files and commit (requests first, so the
 * provisioner sees a request no later than the secret it is for), then wait for each receipt to
 * show the fresh digest. The previous files are then removed: a revoke is never taken back, and
 * the old password of a suspect login serves nothing on disk.
 */
export async function revokePrevious(
  logins: readonly LeftLogin[],
  transportFor: TransportFor,
  options: RevokeOptions,
): Promise<PairRevoke[]> {
  const results = new Map<string, PairRevoke>();
  const fresh = new Map(logins.map((l) => [l.pair, Secret.generate()]));
  const digests: Record<string, SecretDigest> = {};
  const targets = new Map([...fresh].map(([pair, secret]) => [pair, digestPrefix(secret.digest)]));
  try {
    await options.beforeStage?.(targets);
  } catch (error) {
    return logins.map((l) =>
      notRevoked(
        l,
        `its fresh password was not staged: the journal could not record it (${reasonOf(error)})`,
        options.endSessions,
      ),
    );
  }
  const committed: LeftLogin[] = [];
  await mapBounded(
    [...groupBy(logins, (l) => l.providerMachine)],
    options.concurrency,
    async ([machine, list]) => {
      const secrets = list.map((l) => fresh.get(l.pair)!);
      const files: StagedFile[] = list.map((l, i) => ({ path: l.providerPath, secret: secrets[i]! }));
      // The request is the digest of the secret it is for: not a secret, carried as a one-line file.
      const requests: StagedFile[] = options.endSessions
        ? list.map((l, i) => ({
            path: endSessionsPath(l.providerPath),
            secret: Secret.fromText(secrets[i]!.digest),
          }))
        : [];
      const transport = transportFor(machine);
      let stage = 'staging';
      try {
        const landed = await transport.stage([...requests, ...files]);
        [...requests, ...files].forEach((f, i) => {
          if (landed[i] !== f.secret.digest)
            throw new Error(`the staged ${f.path}.next does not match what was sent`);
        });
        stage = 'committing';
        await transport.keepPrevious(files.map((f) => f.path));
        await transport.commit([...requests, ...files].map((f) => f.path));
        list.forEach((l, i) => (digests[l.pair] = secrets[i]!.digest));
        committed.push(...list);
      } catch (error) {
        if (stage === 'staging')
          await transport.unstage([...requests, ...files].map((f) => f.path)).catch(() => undefined);
        // The target stays named: a commit whose answer was lost may have made it live (status reads which).
        for (const l of list)
          results.set(l.pair, {
            ...notRevoked(
              l,
              `${machine} failed while ${stage} the fresh secret (${reasonOf(error)})`,
              options.endSessions,
            ),
            target: targets.get(l.pair)!,
          });
      }
    },
  );

  // The receipt wait of delivery.ts, on the left logins' files: a pair per left login.
  const waited = committed.map(
    (l) =>
      ({
        key: l.pair,
        providerMachine: l.providerMachine,
        consumerMachine: l.providerMachine,
        receiptPath: l.receiptPath,
      }) as PlannedPair,
  );
  const confirmed =
    waited.length > 0 ? await awaitReceipts(waited, digests, transportFor, options) : new Set<string>();
  const within = options.waitMs >= 1000 ? `${Math.round(options.waitMs / 1000)} s` : `${options.waitMs} ms`;
  await mapBounded(
    [...groupBy(committed, (l) => l.providerMachine)],
    options.concurrency,
    async ([machine, list]) => {
      const transport = transportFor(machine);
      const done = list.filter((l) => confirmed.has(l.pair));
      let texts: readonly (string | undefined)[] = [];
      try {
        texts = done.length > 0 ? await transport.readTexts(done.map((l) => l.receiptPath)) : [];
      } catch {
        // The receipt was seen with the fresh digest: revoked; only the session list is unknown.
      }
      done.forEach((l, i) =>
        results.set(l.pair, { pair: l.pair, login: l.login, revoked: true, ...sessionsOf(texts[i]) }),
      );
      for (const l of list) {
        if (confirmed.has(l.pair)) continue;
        const why = options.stop?.aborted
          ? `the wait for ${l.provider}'s receipt was stopped before it confirmed ${l.login}'s fresh password`
          : `${l.provider}'s provisioner did not confirm ${l.login}'s fresh password within ${within}`;
        results.set(l.pair, {
          ...notRevoked(l, why, options.endSessions),
          target: targets.get(l.pair)!,
          armed: true,
        });
      }
      await transport.discardPrevious(list.map((l) => l.providerPath)).catch(() => undefined);
    },
  );
  return logins.map((l) => results.get(l.pair)!);
}

/** A revoke that did not happen (or is not confirmed), `why` in words, with what to do next. */
export function notRevoked(
  l: LeftLogin,
  why: string,
  /** Asked with --end-sessions: the next step asks it again. */
  endSessions = false,
): Extract<PairRevoke, { revoked: false }> {
  return {
    pair: l.pair,
    login: l.login,
    revoked: false,
    reason: `${why}: the old password of ${l.login} MAY STILL WORK`,
    next: [
      'once ',
      l.provider,
      "'s provisioner applies again, rotate the pair once more with --revoke-previous, which gives both logins fresh passwords: ",
      nextStep(`mesh rotate --pair ${l.pair} --revoke-previous${endSessions ? ' --end-sessions' : ''}`),
    ],
  };
}

/** The receipt's `sessions` and `ended_sessions` (written by the provisioner for a login); absent fields are none. */
export function sessionsOf(text: string | undefined): {
  sessions: readonly OpenSession[];
  endedSessions?: number;
} {
  const receipt = text === undefined ? undefined : parseReceipt(text);
  const sessions = receipt?.sessions ?? [];
  return receipt?.ended_sessions !== undefined
    ? { sessions, endedSessions: receipt.ended_sessions }
    : { sessions };
}

/** `pid 4242 "app" from 10.0.0.5 since …` — one session, in words. */
export function sessionText(s: OpenSession): string {
  return `pid ${s.pid}${s.application_name ? ` "${s.application_name}"` : ''}${s.client_addr ? ` from ${s.client_addr}` : ' (local socket)'}${s.backend_start ? ` since ${s.backend_start}` : ''}`;
}
