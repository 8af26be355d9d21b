/**
 * What a new rotation or seed of a pair must not start over: a staged `.next` on either end, a
 * provider's previous file kept by a rotation that did not finish, or a rotation the journal
 * says is open. Rotating over any of them is how a database ends with a password no file holds.
 * Each leftover names the rotation that left it, so the refusal can say how to finish it
 * (`mesh resume`) or take it back (`mesh rollback`). Pure but for the reading.
 */
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { nextStep, renderStep } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import { isDigestOf } from './digest.js';
import type { JournalHistory } from './journal-history.js';
import type { JournalPair } from './journal.js';
import { pairOnMachines, withMachineTruth } from './intent.js';
import { switchBackLeftBehind, switchBackWhat } from './switch-back.js';
import { mapBounded } from './map-bounded.js';
import { parseLockHolder } from './mesh-lock.js';
import {
  providerFilesOf,
  settleLogins,
  type EndsRead,
  type PlannedPair,
  type RotationPlan,
} from './rotation-plan.js';
import type { Machine } from './inventory.js';
import { reasonOf, type FileDigests, type TransportFor } from './transport.js';

export interface Leftover {
  readonly pair: PlannedPair;
  /** The rotation that left it, when the journal knows. */
  readonly rotation: string | undefined;
  readonly what: string;
  /** The provider's lock is held now: the holder's words (then the way out is to wait). */
  readonly running?: string;
  /** Its rotation never finished preparing: `mesh rollback` takes it back; `mesh resume` would be refused. */
  readonly takeBackOnly?: boolean;
  /** A switch back to single cut short after its consumer commit (switch-back.ts): only `mesh resume` finishes it. */
  readonly finishOnly?: boolean;
}

/** One pair's leftover, from what its two ends hold and the journal; undefined when it is clean. */
export function leftoverOf(
  pair: PlannedPair,
  provider: FileDigests | undefined,
  consumer: FileDigests | undefined,
  history: JournalHistory,
): Leftover | undefined {
  const open = history.unfinished(pair.key);
  const staged = provider?.next ?? consumer?.next;
  // A staged file no rotation prepared is nobody's: naming the rotation that prepared the live
  // file instead would offer a resume of a finished rotation, which is refused.
  const rotation =
    open ??
    (staged
      ? history.preparedBy(pair.key, staged)
      : provider?.live
        ? history.preparedBy(pair.key, provider.live)
        : undefined);
  // A `--revoke-previous` cut short staged the left login's fresh secret there, delivered nowhere:
  // the next stage replaces it. Refusing it, with no rotation to finish, refused every way out.
  const revokeStaged = isDigestOf(history.revokeTarget(pair.key), provider?.next);
  if (provider?.next && !revokeStaged)
    return { pair, rotation, what: `${pair.providerMachine} has ${pair.providerPath}.next staged` };
  if (consumer?.next)
    return { pair, rotation, what: `${pair.consumerMachine} has ${pair.consumerPath}.next staged` };
  // A previous file beside a finished pair (both ends equal) is only one a clean-up missed. An
  // alternating pair's ends never hold the same text; its `.prev` sits beside the login its
  // consumer is NOT on (the one this rotation targets), left by a baton that died after a
  // consumer commit. Unless the journal has a rotation open, rotating over it is safe — the
  // consumer stays on its live login — so it is not a leftover; refusing it would block that
  // login's every later rotation.
  const finishedOnDisk =
    open !== undefined && consumerHoldsWhatItPrepared(history.preparedPair(pair.key, open), consumer);
  const finished =
    pair.credential === 'alternating'
      ? open === undefined || finishedOnDisk
      : provider?.live !== undefined && provider.live === consumer?.live;
  if (provider?.prev && !finished)
    return {
      pair,
      rotation,
      what: `${pair.providerMachine} keeps the previous provider file of a rotation that did not finish`,
    };
  if (open && !finishedOnDisk) return { pair, rotation, what: `rotation ${open} has not finished it` };
  return undefined;
}

/**
 * A baton killed after a pair's consumer commit, before the journal said "applied": the consumer
 * end holds exactly what that rotation prepared for it, which it receives only after the
 * provider's receipt — the pair is finished, whatever the journal's last word. `mesh status`
 * reads it as finished too; refusing it here would leave a rotation that status calls healthy.
 */
function consumerHoldsWhatItPrepared(
  prepared: JournalPair | undefined,
  consumer: FileDigests | undefined,
): boolean {
  const expected = prepared?.consumer_digest ?? prepared?.digest;
  return expected !== undefined && consumer?.live === expected;
}

/**
 * Reads both ends of every pair, and every provider-end file a pair may have (providerFilesOf),
 * one call per machine; a machine that cannot be read is left to the gate.
 */
export async function readPlanEnds(
  plan: RotationPlan,
  transportFor: TransportFor,
  concurrency: number,
  unread?: Map<string, string>,
): Promise<Map<string, FileDigests>> {
  const ends = new Map<string, FileDigests>();
  const extra = new Map<string, Set<string>>();
  for (const pair of plan.pairs) {
    let paths = extra.get(pair.providerMachine);
    if (!paths) extra.set(pair.providerMachine, (paths = new Set()));
    for (const p of providerFilesOf(pair)) paths.add(p);
  }
  await mapBounded(plan.holders, concurrency, async (holder) => {
    const paths = [...new Set([...holder.receives.map((d) => d.path), ...(extra.get(holder.machine) ?? [])])];
    try {
      // A pooler's machine that holds no pair's end has nothing to read: it is asked to answer.
      if (paths.length === 0) return await transportFor(holder.machine).resolve();
      const read = await transportFor(holder.machine).digests(paths);
      paths.forEach((p, i) => ends.set(`${holder.machine}\0${p}`, read[i]!));
    } catch (error) {
      // Unreadable: the rotation's gate names it and sends nothing.
      unread?.set(holder.machine, reasonOf(error));
    }
  });
  return ends;
}

/**
 * The leftovers of a plan whose ends were read: the machines' records say which rotation left
 * each (intent.ts), the journal only where a machine holds none. A pair whose provider lock is
 * held now is another controller's rotation under way: `running` names it.
 */
export function leftoversIn(
  plan: RotationPlan,
  ends: EndsRead,
  history: JournalHistory,
  /** The lock words of the operation reading (its own locks are not another's rotation). */
  self?: string,
): Leftover[] {
  const byKey = new Map(plan.pairs.map((p) => [p.key, pairOnMachines(p, ends, self)]));
  const truth = withMachineTruth(history, (key) => byKey.get(key));
  return plan.pairs.flatMap((pair) => {
    const found = leftoverOf(
      pair,
      ends.get(`${pair.providerMachine}\0${pair.providerPath}`),
      ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`),
      truth,
    );
    const on = byKey.get(pair.key);
    const running = on?.lockedBy;
    // Never prepared whole: only a roll-back can end it (resume would be refused).
    const takeBackOnly =
      found?.rotation !== undefined &&
      on?.intent?.rotation === found.rotation &&
      on.intent.phase === 'preparing';
    if (found)
      return [
        {
          ...found,
          ...(running === undefined ? {} : { running }),
          ...(takeBackOnly ? { takeBackOnly } : {}),
        },
      ];
    if (running !== undefined) return [{ pair, rotation: undefined, what: 'a rotation is running', running }];
    // Only when the machines name the rotation that switched: its resume finishes it. Without
    // a record (a switch made before records existed) the next rotation's retire removes them.
    const leftBehind = switchBackLeftBehind(
      pair,
      ends.get(`${pair.providerMachine}\0${pair.providerPath}`),
      ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`),
    );
    const switched = on?.intent?.rotation;
    return leftBehind && switched
      ? [{ pair, rotation: switched, what: switchBackWhat(pair, leftBehind), finishOnly: true }]
      : [];
  });
}

/**
 * What a rotation needs to know before it generates anything, from one read per machine: each
 * alternating pair's target login (settleLogins) and the leftovers of the plan so fixed.
 */
export async function inspectPlan(
  plan: RotationPlan,
  transportFor: TransportFor,
  history: JournalHistory,
  concurrency: number,
  machineOf: (name: string) => Machine,
  self?: string,
): Promise<{
  plan: RotationPlan;
  leftovers: Leftover[];
  unknownLogins: readonly { readonly pair: string; readonly machine: string; readonly reason: string }[];
  /** Machines that could not be read, with why: this read is the gate's resolve (one pass per machine). */
  unread: ReadonlyMap<string, string>;
}> {
  const unread = new Map<string, string>();
  const ends = await readPlanEnds(plan, transportFor, concurrency, unread);
  const settled = settleLogins(plan, ends, machineOf);
  const unknownLogins = settled.pairs
    .filter((p) => p.credential === 'alternating' && unread.has(p.consumerMachine))
    .map((p) => ({ pair: p.key, machine: p.consumerMachine, reason: unread.get(p.consumerMachine)! }));
  return { plan: settled, leftovers: leftoversIn(settled, ends, history, self), unknownLogins, unread };
}

/**
 * An alternating pair whose consumer end could not be read has no known live login: rotating
 * a guessed slot could change the password the consumer is using. Refused before anything is
 * generated, like an unresolved holder.
 */
export function unknownLoginsRefusal(
  unknown: readonly { readonly pair: string; readonly machine: string; readonly reason: string }[],
): BatonError {
  return new BatonError('gate-closed', {
    what: `mesh rotate refused: the live login of ${unknown.length === 1 ? '1 alternating pair' : `${unknown.length} alternating pairs`} could not be read (${unknown.map((u) => u.pair).join(', ')}).`,
    where: [...new Map(unknown.map((u) => [u.machine, `${u.machine} (${u.reason})`])).values()].join('; '),
    next: 'Make the machines reachable, then rotate again.',
    changed: 'Nothing was generated and nothing was sent.',
  });
}

/** Reads both ends of every pair (one call per machine); a machine that cannot be read is left to the gate. */
export async function findLeftovers(
  plan: RotationPlan,
  transportFor: TransportFor,
  history: JournalHistory,
  concurrency: number,
  self?: string,
): Promise<Leftover[]> {
  return leftoversIn(plan, await readPlanEnds(plan, transportFor, concurrency), history, self);
}

/** The two ways out of a leftover, as suggested commands. */
export function waysOut(leftover: Leftover, s: Suggester = PLAIN_SUGGESTER): string {
  if (leftover.running !== undefined)
    return `wait for it: ${holderWords(leftover.running)} holds ${leftover.pair.provider}'s lock on ${leftover.pair.providerMachine}, then run ${renderStep(s, nextStep('mesh status'))}`;
  if (leftover.takeBackOnly && leftover.rotation)
    return `take it back with ${renderStep(s, nextStep(`mesh rollback ${leftover.rotation}`))} (it never finished preparing: nothing of it took effect)`;
  if (leftover.finishOnly && leftover.rotation)
    return `finish it with ${renderStep(s, nextStep(`mesh resume ${leftover.rotation}`))} (it removes the logins' files; the provisioner then sets both logins NOLOGIN)`;
  return leftover.rotation
    ? `finish it with ${renderStep(s, nextStep(`mesh resume ${leftover.rotation}`))} or roll it back with ${renderStep(s, nextStep(`mesh rollback ${leftover.rotation}`))}`
    : `no rotation in this mesh's journal left it: remove the staged or kept file on the machine by hand (it is never read), then run ${renderStep(s, nextStep('mesh status'))}`;
}

/** The refusal `mesh rotate` and `mesh seed` give before generating anything. */
export function leftoversRefusal(
  command: 'rotate' | 'seed',
  leftovers: readonly Leftover[],
  s: Suggester = PLAIN_SUGGESTER,
): BatonError {
  // Another controller's rotation under way is not a leftover to clear: it is a busy lock (exit 5).
  const running = leftovers.filter((l) => l.running !== undefined);
  if (running.length > 0)
    return new BatonError('lock-busy', {
      what: `mesh ${command} refused: ${running.map((l) => `${l.pair.key} is being rotated by ${holderWords(l.running!)}`).join('; ')}.`,
      where: [...new Set(running.map((l) => l.pair.providerMachine))].join(', '),
      next: ['Wait for it to finish, then run ', nextStep('mesh status'), ' to see where the pairs stand.'],
      changed: 'Nothing was generated and nothing was sent.',
    });
  return new BatonError('refused', {
    what: `mesh ${command} refused: ${leftovers.length === 1 ? '1 pair has' : `${leftovers.length} pairs have`} a rotation that did not finish — ${leftovers.map((l) => `${l.pair.key}${l.rotation ? ` (rotation ${l.rotation})` : ''}: ${l.what}`).join('; ')}.`,
    next: leftovers.map((l) => `${l.pair.key}: ${waysOut(l, s)}`).join('; '),
    changed: 'Nothing was generated and nothing was sent.',
  });
}

/** A lock holder's words (a JSON object from lockHolderText, or whatever an older writer left) in a sentence. */
export function holderWords(text: string): string {
  const h = parseLockHolder(text);
  if (h)
    return `${shown(h.command)} (pid ${h.pid} on ${shown(h.host)}${h.since === undefined ? '' : ` since ${shown(h.since)}`})`;
  // not ours: shown as it is
  return text === '' ? 'another baton (it has not said who)' : `another baton (${shown(text)})`;
}
