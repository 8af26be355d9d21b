/**
 * Reads what `mesh status` needs from every holder: digests and mtimes of each delivered file
 * (computed ON the holder; the content never leaves it) and, on provider machines, the
 * receipts. One machine at a time per worker and its calls asked together, so a machine costs
 * one connection however many pairs it holds (over ssh: one agent session, or one shared
 * connection under a rotation's selection by age).
 */
import { reasonOf } from './transport.js';
import type { FileDigests, TransportFor } from './transport.js';
import { pairOnMachines, withMachineTruth, type PairOnMachines } from './intent.js';
import { holderWords, leftoversIn } from './leftovers.js';
import { LOGIN_SLOTS, loginRole, otherSlot, slotOfLogin } from './alternating.js';
import { parseReceipt, type Receipt, type SecretDigest } from './digest.js';
import type { JournalHistory } from './journal-history.js';
import { mapBounded } from './map-bounded.js';
import { appStatus } from './app-status.js';
import { confirmations } from './confirmed.js';
import type { AppHooks } from './reload.js';
import { parseCensus, sessionsPath } from './session-record.js';
import {
  pairStatus,
  revokeOf,
  withApp,
  type EndReading,
  type LoginsReading,
  type PairStatus,
} from './mesh-status.js';
import {
  loginFilePaths,
  providerFilesOf,
  settledPairs,
  type PlannedPair,
  type RotationPlan,
} from './rotation-plan.js';

export interface MeshStatusOptions {
  readonly concurrency: number;
  readonly nowMs: number;
  readonly maxAgeMs: number | undefined;
  /** Called as each machine has been read (a view shows progress). */
  readonly onMachine?: (machine: string, ok: boolean) => void;
  /** Who holds the mesh lock now (meshLockHolder), in words; undefined when nobody does. */
  readonly running?: string;
  /**
   * The inventory's `connect:` and `reload:` (appHooks): a step it names that no record says ran
   * is `not-confirmed`, one it does not name `not-configured`. Without them: `not-confirmed`.
   */
  readonly app?: AppHooks;
}

/**
 * Each pair as its machines and the journal say it is. `history` may still be being read: it is
 * needed only once the machines have answered, so `mesh status` parses the journal while the
 * first sessions shake hands rather than before the first ssh starts.
 */
export async function readMeshStatus(
  plan: RotationPlan,
  transportFor: TransportFor,
  journalHistory: JournalHistory | Promise<JournalHistory>,
  options: MeshStatusOptions,
): Promise<PairStatus[]> {
  const ends = new Map<string, EndReading>();
  const liveLogins = new Map<string, string>();
  const receipts = new Map<string, Receipt | undefined>();
  /** Every path's reading as the holder gave it (records and lock too): the machines' word on each pair. */
  const raw = new Map<string, FileDigests>();
  const texts = new Map<string, string | undefined>();
  const endKey = (machine: string, file: string) => `${machine}\0${file}`;
  const byKey = new Map(plan.pairs.map((p) => [p.key, p]));
  // An alternating pair's provider end is the file of the login its consumer is on: both are read, with their receipts.
  const loginFiles = (p: PlannedPair) =>
    p.credential === 'alternating' ? LOGIN_SLOTS.map((slot) => loginFilePaths(p, slot)) : [];
  await mapBounded(plan.holders, options.concurrency, async (holder) => {
    const provided = holder.receives.filter((d) => d.end === 'provides').map((d) => byKey.get(d.pair)!);
    const paths = [
      ...new Set([
        ...holder.receives.map((d) => d.path),
        ...provided.flatMap((p) => loginFiles(p).map((f) => f.providerPath)),
        // Where the pair's intent lives, whatever its mode (intent.ts), and the other mode's
        // files: settled as rotate settles (a single pair's login files a switch back left).
        ...provided.flatMap((p) => providerFilesOf(p)),
      ]),
    ];
    const receiptPaths = provided.flatMap((p) => [
      p.receiptPath,
      ...loginFiles(p).map((f) => f.receiptPath),
      ...censusPaths(p), // app-truth: the session census (app-status.ts)
    ]);
    try {
      const transport = transportFor(holder.machine);
      // Asked together: on the machine's one agent session the texts' request goes out behind
      // the digests' rather than a round trip after their answer (a provider's second read).
      const digesting = transport.digests(paths);
      const reading = receiptPaths.length > 0 ? transport.readTexts(receiptPaths) : undefined;
      // Its failure is the machine's, said once below: not a rejection nobody awaited meanwhile.
      reading?.catch(() => undefined);
      const digests = await digesting;
      paths.forEach((file, i) => {
        const got = digests[i];
        if (got) raw.set(endKey(holder.machine, file), got);
        ends.set(endKey(holder.machine, file), {
          read: true,
          live: got?.live,
          next: got?.next,
          ...(got?.prev ? { prev: got.prev } : {}),
          liveModifiedMs: got?.liveModifiedMs,
        });
        if (got?.liveLogin) liveLogins.set(endKey(holder.machine, file), got.liveLogin);
      });
      if (reading) {
        const read = await reading;
        receiptPaths.forEach((file, i) => texts.set(endKey(holder.machine, file), read[i]));
        receiptPaths.forEach((file, i) =>
          receipts.set(
            endKey(holder.machine, file),
            read[i] === undefined ? undefined : parseReceipt(read[i]),
          ),
        );
      }
      options.onMachine?.(holder.machine, true);
    } catch (error) {
      const reason = reasonOf(error);
      for (const p of paths) ends.set(endKey(holder.machine, p), { read: false, reason });
      options.onMachine?.(holder.machine, false);
    }
  });
  const history = await journalHistory;
  const unread: EndReading = { read: false, reason: 'not read' };
  const onMachines = new Map<string, PairOnMachines>(plan.pairs.map((p) => [p.key, pairOnMachines(p, raw)]));
  // The machines' records first: another controller's journal, or none, changes nothing here.
  const truth = withMachineTruth(history, (key) => onMachines.get(key));
  // What rotate would refuse, read by the function rotate reads it with, over pairs settled as rotate settles them.
  const leftovers = new Map(
    leftoversIn({ ...plan, pairs: settledPairs(plan.pairs, raw) }, raw, history).map((l) => [l.pair.key, l]),
  );
  const census = (planned: PlannedPair, login: string) => {
    const text = texts.get(endKey(planned.providerMachine, sessionsPath(planned.receiptPath, login)));
    return text === undefined ? undefined : parseCensus(text);
  };
  return plan.pairs.map((planned) => {
    const on = onMachines.get(planned.key)!;
    const running = on.lockedBy !== undefined ? holderWords(on.lockedBy) : options.running;
    let pair = planned;
    let logins: LoginsReading | undefined;
    if (planned.credential === 'alternating') {
      const live = liveLogins.get(endKey(planned.consumerMachine, planned.consumerPath));
      const slot = live === undefined ? undefined : slotOfLogin(planned.role, live);
      if (slot) {
        // Shown and compared as the live login's file, so every detail names the file that matters.
        pair = { ...planned, ...loginFilePaths(planned, slot) };
        const other = loginFilePaths(planned, otherSlot(slot));
        const otherEnd = ends.get(endKey(planned.providerMachine, other.providerPath));
        logins = {
          live,
          other: {
            login: loginRole(planned.role, otherSlot(slot)),
            path: other.providerPath,
            read: otherEnd?.read === true,
            next: otherEnd?.read === true && otherEnd.next !== undefined,
            prev: otherEnd?.read === true && otherEnd.prev !== undefined,
            ...(otherEnd?.read === true && otherEnd.live ? { liveDigest: otherEnd.live } : {}),
            ...(otherEnd?.read === true && otherEnd.next ? { nextDigest: otherEnd.next } : {}),
            file: otherEnd?.read === true && otherEnd.live !== undefined,
            receipt: receipts.get(endKey(planned.providerMachine, other.receiptPath)) !== undefined,
            ...receiptDigestOf(receipts.get(endKey(planned.providerMachine, other.receiptPath))),
          },
        };
      } else logins = { live: undefined, other: undefined };
    }
    const status = pairStatus(
      pair,
      {
        provider: ends.get(endKey(pair.providerMachine, pair.providerPath)) ?? unread,
        consumer: ends.get(endKey(pair.consumerMachine, pair.consumerPath)) ?? unread,
        receipt: receipts.get(endKey(pair.providerMachine, pair.receiptPath)),
        ...(logins ? { logins } : {}),
      },
      truth,
      options.nowMs,
      options.maxAgeMs,
      running,
      leftovers.get(planned.key),
    );
    // app-truth: how the app takes the credential, beside `applied` (app-status.ts).
    const consumerEnd = ends.get(endKey(pair.consumerMachine, pair.consumerPath));
    const journalAt = history.pair(planned.key).lastRotatedAt;
    const mtime = consumerEnd?.read ? consumerEnd.liveModifiedMs : undefined;
    const live = logins?.live ?? planned.role;
    const left = logins?.other?.login;
    const app = appStatus({
      consumer: planned.consumer,
      live,
      ...(left ? { left } : {}),
      movedAtMs: journalAt ? Date.parse(journalAt) : mtime === undefined ? undefined : mtime + MTIME_SLACK_MS,
      lastReload: history.lastReload(planned.key),
      liveCensus: census(planned, live),
      leftCensus: left ? census(planned, left) : undefined,
    });
    const withAppStatus = withApp(status, app);
    // Revoked is said once its receipt matches (loginsOf); until then armed, or not done (revokeOf).
    return {
      ...withAppStatus,
      ...revokeOf(logins?.other, withAppStatus.logins?.other?.state, history.armedRevoke(planned.key)),
      confirmed: confirmations({
        journal: history.confirmed(planned.key),
        hasConnect: options.app ? options.app.connectOf(planned.provider) !== undefined : undefined,
        hasReload: options.app ? options.app.reloadOf(planned.consumer) !== undefined : undefined,
        filesAgreeNow: withAppStatus.state === 'applied' || withAppStatus.state === 'app-behind',
        sessions: app.newSessions,
      }),
    };
  });
}

/** A file's mtime is when it was staged, before its rename (and whole seconds over ssh): later, to be safe. */
const MTIME_SLACK_MS = 2_000;

/** The census records a pair's logins have: its role, or both alternating logins. */
function censusPaths(p: PlannedPair): string[] {
  const logins =
    p.credential === 'alternating' ? LOGIN_SLOTS.map((slot) => loginRole(p.role, slot)) : [p.role];
  return logins.map((login) => sessionsPath(p.receiptPath, login));
}

function receiptDigestOf(receipt: Receipt | undefined): { receiptDigest?: SecretDigest } {
  return receipt ? { receiptDigest: receipt.digest } : {};
}
