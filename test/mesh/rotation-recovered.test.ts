/**
 * `mesh rollback` as a start state of the rotation's machine (src/app/rotation-recovered.ts):
 * every read a crash past the `prepared` record can leave — each pair finished by an earlier
 * step, no longer the rotation's, or open — enters `rolling-back`, and every way the roll-back
 * can end leads to the terminal `rolled-back` with one record, never to a step that waits for
 * a person or refuses (issue 45: every state has a way out). Pure: no machine, no journal.
 */
import { describe, expect, it } from 'vitest';
import {
  isCommitted,
  isTerminal,
  resumeOutcome,
  rotation,
  ROTATION_EXIT,
  rotationExitCode,
  rotationOutcome,
  type RotationEffect,
  type RotationEvent,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import {
  resumeStart,
  TAKE_BACK_EXIT,
  takeBackStart,
  type TakeBackRead,
} from '../../src/app/rotation-recovered.js';
import { journalRecord, rotationRunner } from '../../src/app/rotation-run-effect.js';
import { EXIT_CODES, EXIT_OK } from '../../src/errors.js';
import type { SecretDigest } from '../../src/mesh/digest.js';
import { journalHolders, type JournalRecord } from '../../src/mesh/journal.js';
import type { PairRollback } from '../../src/mesh/rollback.js';
import { endDigest, type MachineFailure } from '../../src/mesh/delivery.js';
import { resumeFromRead } from '../../src/mesh/resume.js';
import type { FileDigests } from '../../src/mesh/transport.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from './mesh-fixture.js';

// pg-main:web1-app, pg-audit:web1-app, pg-main:backup: three pairs on three machines.
const plan = planRotation(meshInventory(1), { by: 'all' });
const keys = plan.pairs.map((p) => p.key);
const digests = Object.fromEntries(keys.map((k, i) => [k, `sha256:${i}${i}`])) as Record<
  string,
  SecretDigest
>;

type Where = 'finished' | 'settled' | 'open';
const WHERE: readonly Where[] = ['finished', 'settled', 'open'];

/** Every assignment of a place to each pair: 27 reads. */
function everyRead(): Where[][] {
  let out: Where[][] = [[]];
  for (let i = 0; i < keys.length; i++) out = out.flatMap((r) => WHERE.map((w) => [...r, w]));
  return out;
}

function readOf(places: readonly Where[]): TakeBackRead {
  const at = (w: Where) => new Set(keys.filter((_, i) => places[i] === w));
  return {
    id: 'r1',
    pairs: plan.pairs,
    holders: plan.holders,
    selectorText: 'every pair',
    digests,
    previous: { [keys[0]!]: 'sha256:old' as SecretDigest },
    finished: at('finished'),
    settled: at('settled'),
  };
}

/** How a roll-back can end for one pair (src/mesh/rollback.ts PairRollback). */
const RESULTS: readonly ((pair: string) => PairRollback)[] = [
  (pair) => ({ pair, result: 'finished' }),
  (pair) => ({ pair, result: 'rolled-back', receipt: 'old' }),
  (pair) => ({
    pair,
    result: 'rolled-back',
    receipt: 'unknown',
    leftover: 'web1: x.next could not be removed',
  }),
  (pair) => ({ pair, result: 'provider-unknown', reason: 'db1 unreachable' }),
  (pair) => ({ pair, result: 'consumer-unknown', reason: 'web1 unreachable' }),
];

function run(state: RotationState, events: readonly RotationEvent[]) {
  const effects: RotationEffect[] = [];
  for (const event of events) {
    const step = rotation(state, event);
    state = step.state;
    effects.push(...step.effects);
  }
  return { state, effects };
}

const clean = (r: PairRollback) => r.result === 'finished' || (r.result === 'rolled-back' && !r.leftover);

describe("mesh rollback, entered at the rotation machine's rolling-back step", () => {
  it('every read asks for the roll-back of exactly the open pairs, and nothing else', () => {
    for (const places of everyRead()) {
      const start = takeBackStart(readOf(places));
      const open = keys.filter((_, i) => places[i] === 'open');
      expect(start.state.step).toBe('rolling-back');
      expect(start.effects).toEqual([{ type: 'roll-back', pairs: open }]);
      // Pairs an earlier step finished count as finished; settled ones are nobody's business here.
      expect(start.state.step === 'rolling-back' && start.state.applied).toEqual(
        keys.filter((_, i) => places[i] === 'finished'),
      );
    }
  });

  it('every read and every way the roll-back ends leads to rolled-back with one record: finished or taken back, never a wait for a person', () => {
    let walks = 0;
    for (const places of everyRead()) {
      const open = keys.filter((_, i) => places[i] === 'open');
      const finishedBefore = keys.filter((_, i) => places[i] === 'finished');
      for (const resultOf of RESULTS) {
        const results = open.map(resultOf);
        const start = takeBackStart(readOf(places));
        const { state, effects } = run(start.state, [{ type: 'rolled-back', results }]);
        walks++;
        expect(isTerminal(state)).toBe(true);
        if (state.step !== 'rolled-back') throw new Error(state.step);
        const finishedNow = results.filter((r) => r.result === 'finished').map((r) => r.pair);
        const allFinished = results.length > 0 && results.every((r) => r.result === 'finished');
        // One record, in one word per outcome.
        expect(effects.filter((e) => e.type === 'journal')).toEqual([
          { type: 'journal', phase: allFinished ? 'finished' : 'rolled-back', state },
        ]);
        // Only the pairs finished now drop their kept file: the earlier ones' may be a later rotation's.
        expect(effects.filter((e) => e.type === 'discard-previous')).toEqual(
          finishedNow.length > 0 ? [{ type: 'discard-previous', pairs: finishedNow }] : [],
        );
        expect(effects.map((e) => e.type).sort()).toEqual(
          finishedNow.length > 0 ? ['discard-previous', 'journal'] : ['journal'],
        );
        // A settled pair is in neither list; every open pair has its result.
        const record = journalRecord(state, 'rolled-back', { operator: 'op' });
        expect(record.applied).toEqual([...finishedBefore, ...finishedNow]);
        expect(record.rolled_back?.map((r) => r.pair)).toEqual(open);
        expect(record.results.every((r) => r.ok)).toBe(true);
        expect(record.selector).toBe('every pair');
        // The exit: 0 once every pair is finished or taken back; 3 names what is left (never 4 or 5: no gate, no lock).
        expect(TAKE_BACK_EXIT[rotationOutcome(state)]).toBe(
          results.every(clean) ? EXIT_OK : EXIT_CODES['action-needed'],
        );
        // Nothing after the terminal moves it.
        for (const late of [
          { type: 'rolled-back', results: [] },
          { type: 'previous-discarded' },
          { type: 'confirmed' },
        ] as RotationEvent[])
          expect(rotation(state, late)).toEqual({ state, effects: [] });
      }
    }
    expect(walks).toBe(27 * RESULTS.length);
  });

  it('a roll-back that threw still ends: each of its pairs is provider-unknown, and the record says rolled-back', () => {
    const start = takeBackStart(readOf(['open', 'open', 'finished']));
    const runner = rotationRunner({
      transportFor: () => {
        throw new Error('unused');
      },
      journalDir: '/nowhere',
      operator: 'op',
      resolve: { concurrency: 1 },
      concurrency: 1,
      waitMs: 0,
      pollMs: 10,
    });
    const failed = runner.failed(start.effects[0]!, new Error('connection reset'));
    const { state, effects } = run(start.state, [failed]);
    expect(state.step === 'rolled-back' && state.results.map((r) => [r.pair, r.result])).toEqual([
      [keys[0], 'provider-unknown'],
      [keys[1], 'provider-unknown'],
    ]);
    expect(effects).toEqual([{ type: 'journal', phase: 'rolled-back', state }]);
    expect(state.step === 'rolled-back' && TAKE_BACK_EXIT[rotationOutcome(state)]).toBe(
      EXIT_CODES['action-needed'],
    );
  });

  it('a record that cannot be written ends in journal-failed with the files live, not in a loop', () => {
    const start = takeBackStart(readOf(['open', 'settled', 'open']));
    const { state } = run(start.state, [
      { type: 'rolled-back', results: [RESULTS[1]!(keys[0]!), RESULTS[1]!(keys[2]!)] },
      {
        type: 'journal-failed',
        phase: 'rolled-back',
        journal: { what: 'The rotation journal could not be written (EACCES).', where: '/j', next: 'fix' },
      },
    ]);
    expect(state.step).toBe('journal-failed');
    expect(state.step === 'journal-failed' && state.files).toBe('live');
    expect(isTerminal(state)).toBe(true);
  });

  it("events of other steps change nothing while the roll-back runs (a late receipt, a key, a rotation's commit)", () => {
    const start = takeBackStart(readOf(['open', 'open', 'open']));
    for (const event of [
      { type: 'confirmed' },
      { type: 'committed' },
      { type: 'receipt-seen', pair: keys[0]!, digest: digests[keys[0]!]!, appliedAt: 0, at: 0 },
      { type: 'apply-finished', failures: [] },
    ] as RotationEvent[])
      expect(rotation(start.state, event)).toEqual({ state: start.state, effects: [] });
  });

  it("a rotation's own roll-back keeps its words: 'rolled-back' even when every pair finished, and its applied pairs drop their kept files", () => {
    const start = takeBackStart(readOf(['finished', 'open', 'open']));
    const own = { ...start.state, recovered: undefined } as RotationState;
    const { state, effects } = run(own, [
      { type: 'rolled-back', results: [RESULTS[0]!(keys[1]!), RESULTS[0]!(keys[2]!)] },
    ]);
    expect(effects).toEqual([
      { type: 'journal', phase: 'rolled-back', state },
      { type: 'discard-previous', pairs: keys },
    ]);
  });
});

describe("mesh resume's outcome, in the rotation's words", () => {
  it('a failed rename first (exit 1), then what waits for the operator (3), else rotated (0)', () => {
    const none = { failures: 0, refused: 0, pending: 0, revokeUnconfirmed: false };
    const cases = [
      [{ ...none, failures: 1, refused: 1, pending: 1, revokeUnconfirmed: true }, 'commit-interrupted', 1],
      [{ ...none, refused: 1, pending: 1, revokeUnconfirmed: true }, 'login-refused', 3],
      [{ ...none, pending: 2, revokeUnconfirmed: true }, 'receipts-pending', 3],
      [{ ...none, revokeUnconfirmed: true }, 'revoke-unconfirmed', 3],
      [none, 'rotated', 0],
    ] as const;
    for (const [end, outcome, code] of cases) {
      expect(resumeOutcome(end)).toBe(outcome);
      expect(ROTATION_EXIT[resumeOutcome(end)]).toBe(code);
    }
  });
});

/** How one end can be found by a resume: the prepared secret live or staged, another secret staged, nothing staged. */
type EndFound = 'live' | 'staged' | 'other' | 'missing';
const FOUND: readonly EndFound[] = ['live', 'staged', 'other', 'missing'];

/** Every way each holder can answer a resume's read: unreadable, or each of its ends as one of FOUND. */
function everyResumeRead(): (readonly EndFound[] | 'unreadable')[][] {
  let out: (readonly EndFound[] | 'unreadable')[][] = [[]];
  for (const holder of plan.holders) {
    let ends: EndFound[][] = [[]];
    for (let i = 0; i < holder.receives.length; i++) ends = ends.flatMap((e) => FOUND.map((f) => [...e, f]));
    const answers = [...ends, 'unreadable' as const];
    out = out.flatMap((r) => answers.map((a) => [...r, a]));
  }
  return out;
}

function digestsOf(
  found: readonly EndFound[],
  expected: readonly (SecretDigest | undefined)[],
): FileDigests[] {
  return found.map((f, i) => ({
    live: f === 'live' ? expected[i] : ('sha256:old' as SecretDigest),
    next: f === 'staged' ? expected[i] : f === 'other' ? ('sha256:other' as SecretDigest) : undefined,
  }));
}

describe("mesh resume's start, decided from what it read before anything is renamed", () => {
  it('every read refuses with its way out, or commits exactly the staged ends and never the live ones (a crash past committing can leave any of them)', () => {
    let reads = 0;
    let commits = 0;
    for (const answers of everyResumeRead()) {
      reads++;
      const found: Record<string, readonly FileDigests[] | MachineFailure> = {};
      const unreadable: string[] = [];
      const wrong: string[] = [];
      const staged = new Set<string>();
      const live = new Set<string>();
      plan.holders.forEach((holder, h) => {
        const answer = answers[h]!;
        if (answer === 'unreadable') {
          unreadable.push(holder.machine);
          found[holder.machine] = { machine: holder.machine, reason: 'connection refused' };
          return;
        }
        const expected = holder.receives.map((d) => endDigest(digests, d.pair, d.end));
        found[holder.machine] = digestsOf(answer, expected);
        holder.receives.forEach((d, i) => {
          const key = `${holder.machine}\0${d.path}`;
          if (answer[i] === 'live') live.add(key);
          else if (answer[i] === 'staged') staged.add(key);
          else
            wrong.push(
              `${holder.machine}: ${d.path}.next is ${answer[i] === 'other' ? 'a different secret' : 'missing'}`,
            );
        });
      });
      const start = resumeFromRead({ id: 'r1', holders: plan.holders, digests, reads: found });
      if (unreadable.length > 0) {
        // An unread machine first: nothing is renamed, and running resume again once it answers is the way out.
        if (start.kind !== 'refused') throw new Error(`expected a refusal for ${JSON.stringify(answers)}`);
        expect(start.failures.map((f) => f.machine)).toEqual(unreadable);
        expect(start.error.code).toBe('gate-closed');
        expect(start.error.next).toBe('Make them reachable, then run `baton mesh resume r1` again.');
        expect(start.error.changed).toBe('Nothing was renamed.');
      } else if (wrong.length > 0) {
        // A staged file that is not the prepared secret: resume never invents one; a new rotation is the way out.
        if (start.kind !== 'refused') throw new Error(`expected a refusal for ${JSON.stringify(answers)}`);
        expect(start.failures.map((f) => f.reason)).toEqual(wrong);
        expect(start.error.code).toBe('refused');
        expect(start.error.next).toContain('baton mesh rotate --pair PROVIDER:CONSUMER');
        expect(start.error.changed).toBe('Nothing was renamed.');
      } else {
        commits++;
        if (start.kind !== 'commit') throw new Error(`expected a commit for ${JSON.stringify(answers)}`);
        // What is live is never renamed again; what is staged is, and nothing else.
        expect([...start.toCommit].sort()).toEqual([...staged].sort());
        expect([...start.live].sort()).toEqual([...live].sort());
        expect(start.alreadyLive).toBe(live.size);
      }
    }
    const ends = plan.holders.map((h) => FOUND.length ** h.receives.length + 1);
    expect(reads).toBe(ends.reduce((a, b) => a * b, 1));
    // Every end live or staged, in every mix: 2^6 reads that go on to the commit.
    expect(commits).toBe(2 ** plan.holders.reduce((n, h) => n + h.receives.length, 0));
  });

  it('a holder missing from the read counts as unread, never as one with nothing staged', () => {
    const [first, ...rest] = plan.holders;
    const reads = Object.fromEntries(
      rest.map((h) => [
        h.machine,
        digestsOf(
          h.receives.map(() => 'staged'),
          h.receives.map((d) => endDigest(digests, d.pair, d.end)),
        ),
      ]),
    );
    const start = resumeFromRead({ id: 'r1', holders: plan.holders, digests, reads });
    expect(start.kind === 'refused' && start.failures).toEqual([
      { machine: first!.machine, reason: 'not read' },
    ]);
  });
});

/** The rotation's `prepared` record a resume writes its own from. */
const preparedRecord: JournalRecord = {
  id: 'r1',
  at: '2026-12-01T00:00:00.000Z',
  operator: 'op',
  phase: 'prepared',
  selector: 'every pair',
  holders: journalHolders(plan.holders),
  results: plan.holders.map((h) => ({ machine: h.machine, ok: true })),
  pairs: plan.pairs.map((p) => ({
    key: p.key,
    provider: p.provider,
    consumer: p.consumer,
    role: p.role,
    provider_machine: p.providerMachine,
    consumer_machine: p.consumerMachine,
    provider_path: p.providerPath,
    consumer_path: p.consumerPath,
    receipt_path: p.receiptPath,
    digest: digests[p.key],
  })),
};

/** A resume's read with every end staged but these (`machine\0path`), read live. */
function resumeOf(liveEnds: readonly string[] = [], finishedBefore: readonly string[] = []) {
  const every = plan.holders.flatMap((h) => h.receives.map((d) => `${h.machine}\0${d.path}`));
  const live = new Set(liveEnds);
  return resumeStart({
    id: 'r1',
    pairs: plan.pairs,
    holders: plan.holders,
    digests,
    record: preparedRecord,
    finishedBefore: new Set(finishedBefore),
    start: {
      kind: 'commit',
      toCommit: new Set(every.filter((k) => !live.has(k))),
      live,
      alreadyLive: live.size,
    },
  });
}

const providerEnd = (i: number) => `${plan.pairs[i]!.providerMachine}\0${plan.pairs[i]!.providerPath}`;
const consumerEnd = (i: number) => `${plan.pairs[i]!.consumerMachine}\0${plan.pairs[i]!.consumerPath}`;

/** What the machines do in a resume's walk: which receipts come, which logins are refused, where renames fail. */
interface World {
  readonly receipts: ReadonlySet<string>;
  readonly refused?: ReadonlySet<string>;
  /** Consumer machines whose rename fails. */
  readonly renameFails?: ReadonlySet<string>;
  /** Provider machines whose rename fails. */
  readonly commitFails?: ReadonlySet<string>;
  /** The `committing` intents could not be written here. */
  readonly unrecorded?: readonly MachineFailure[];
}

/**
 * Runs the reducer from `start`, answering each effect as the machines of `world` would (the
 * runner's events, by hand), until nothing is left to answer; the wait expires once no command
 * of it is in flight. Every effect asked for is returned, in order.
 */
function walkResume(start: { state: RotationState; effects: readonly RotationEffect[] }, world: World) {
  let state = start.state;
  const asked: RotationEffect[] = [];
  const queue: RotationEffect[] = [...start.effects];
  const send = (event: RotationEvent) => {
    const step = rotation(state, event);
    state = step.state;
    queue.push(...step.effects);
  };
  let waiting = false;
  for (;;) {
    const effect = queue.shift();
    if (!effect) {
      if (waiting && state.step === 'applying' && !state.wait.over) {
        send({ type: 'wait-expired' });
        continue;
      }
      break;
    }
    asked.push(effect);
    switch (effect.type) {
      case 'commit': {
        if (state.step !== 'committing') break;
        if (world.unrecorded) {
          send({ type: 'commit-failed', failures: world.unrecorded, unrecorded: true });
          break;
        }
        const failures: MachineFailure[] = [];
        for (const holder of plan.holders) {
          const paths = holder.receives
            .filter((d) => d.end === 'provides' && !live(state, `${holder.machine}\0${d.path}`))
            .map((d) => d.path);
          if (paths.length === 0) continue;
          if (world.commitFails?.has(holder.machine))
            failures.push({ machine: holder.machine, reason: 'commit failed' });
          else send({ type: 'committed-step', machine: holder.machine, end: 'provides', paths });
        }
        send(
          failures.length > 0
            ? { type: 'commit-failed', failures, tested: keys }
            : { type: 'committed', tested: keys },
        );
        break;
      }
      case 'await-receipts':
        waiting = true;
        for (const pair of effect.pairs)
          if (world.receipts.has(pair))
            send({ type: 'receipt-seen', pair, digest: digests[pair]!, appliedAt: 1000, at: 1000 });
        break;
      case 'test-login':
        send({
          type: 'login-tested',
          machine: effect.machine,
          pairs: effect.pairs.map((p) => p.pair),
          refused: effect.pairs
            .filter((p) => world.refused?.has(p.pair))
            .map((p) => ({ pair: p.pair, reason: 'password authentication failed' })),
          moved: [],
        });
        break;
      case 'rename-consumer':
        send(
          world.renameFails?.has(effect.machine)
            ? { type: 'channel-lost', machine: effect.machine, reason: 'rename failed' }
            : {
                type: 'consumer-renamed',
                machine: effect.machine,
                applied: effect.pairs.map((p) => ({ pair: p.pair, windowMs: 7 })),
              },
        );
        break;
      case 'rename-later':
        // The wait's deadline passes during the pause: the machine's pairs stay staged.
        send({ type: 'wait-expired' });
        send({ type: 'rename-due', machine: effect.machine });
        break;
      case 'finish-apply':
        send({ type: 'apply-finished', failures: effect.failures });
        break;
      case 'discard-previous':
        send({ type: 'previous-discarded' });
        break;
      default:
        break;
    }
  }
  return { state, asked };
}

function live(state: RotationState, key: string): boolean {
  return state.step === 'committing' && isCommitted(state.committed, key);
}

const journalPhases = (asked: readonly RotationEffect[]) =>
  asked.flatMap((e) => (e.type === 'journal' ? [e.phase] : []));

describe("mesh resume, entered at the rotation machine's committing step", () => {
  it('starts committing only the provider ends not live, with the pairs read live counted applied and out of the wait', () => {
    const start = resumeOf([providerEnd(0), consumerEnd(0), providerEnd(1)], [keys[0]!]);
    expect(start.effects).toEqual([{ type: 'commit' }]);
    if (start.state.step !== 'committing' || !start.state.resume) throw new Error(start.state.step);
    expect(isCommitted(start.state.committed, providerEnd(0))).toBe(true);
    expect(isCommitted(start.state.committed, providerEnd(1))).toBe(true);
    expect(isCommitted(start.state.committed, providerEnd(2))).toBe(false);
    expect(Object.keys(start.state.wait.consumerOf)).toEqual([keys[1], keys[2]]);
    expect(start.state.resume).toMatchObject({
      consumersLive: [keys[0]],
      alreadyLive: 3,
      providersLive: 2,
      finishedBefore: [keys[0]],
    });
  });

  it('every receipt arrives: each consumer moves after its test login, one `resumed` record, exit 0, nothing rolled back', () => {
    const { state, asked } = walkResume(resumeOf(), { receipts: new Set(keys) });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    expect(state.applied).toEqual(expect.arrayContaining(keys));
    expect(state.applied).toHaveLength(keys.length);
    expect(Object.keys(state.windows).sort()).toEqual([...keys].sort());
    // Three provider ends and three consumer ends renamed now; none was live.
    expect(state.resume).toMatchObject({ failures: [], refused: [], renamedNow: 6, alreadyLive: 0 });
    expect(journalPhases(asked)).toEqual(['resumed']);
    expect(asked.some((e) => e.type === 'roll-back')).toBe(false);
    // Each consumer end moved only after its test login passed.
    const order = asked.map((e) => e.type);
    expect(order.indexOf('test-login')).toBeLessThan(order.indexOf('rename-consumer'));
    expect(asked.filter((e) => e.type === 'discard-previous')).toEqual([
      { type: 'discard-previous', pairs: state.applied },
    ]);
    expect(rotationOutcome(state)).toBe('rotated');
    expect(ROTATION_EXIT[rotationOutcome(state)]).toBe(EXIT_OK);
    // The record is the prepared one's, in the resume's word, with what it applied.
    const record = journalRecord(state, 'resumed', { operator: 'op2', mesh: 'm1' });
    expect(record).toMatchObject({
      id: 'r1',
      phase: 'resumed',
      operator: 'op2',
      mesh: 'm1',
      selector: 'every pair',
      pairs: preparedRecord.pairs,
      applied: state.applied,
      windows_ms: state.windows,
    });
    expect(record.results.every((r) => r.ok)).toBe(true);
  });

  it('a receipt that never arrives leaves its pair staged, not rolled back: `resumed`, receipts-pending, exit 3', () => {
    const { state, asked } = walkResume(resumeOf(), { receipts: new Set([keys[0]!, keys[2]!]) });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    expect([...state.applied].sort()).toEqual([keys[0]!, keys[2]!].sort());
    expect(asked.some((e) => e.type === 'roll-back')).toBe(false);
    expect(journalPhases(asked)).toEqual(['resumed']);
    expect(rotationOutcome(state)).toBe('receipts-pending');
    expect(ROTATION_EXIT[rotationOutcome(state)]).toBe(EXIT_CODES['action-needed']);
  });

  it('a refused test login leaves its consumer staged, not rolled back: login-refused before the pending receipt, exit 3', () => {
    const { state, asked } = walkResume(resumeOf(), {
      receipts: new Set([keys[0]!, keys[1]!]),
      refused: new Set([keys[1]!]),
    });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    expect(state.applied).toEqual([keys[0]]);
    expect(state.resume.refused.map((r) => r.pair)).toEqual([keys[1]]);
    expect(asked.some((e) => e.type === 'roll-back')).toBe(false);
    // The refused pair was never asked to move.
    for (const e of asked)
      if (e.type === 'rename-consumer') expect(e.pairs.map((p) => p.pair)).not.toContain(keys[1]);
    expect(rotationOutcome(state)).toBe('login-refused');
    expect(ROTATION_EXIT[rotationOutcome(state)]).toBe(EXIT_CODES['action-needed']);
  });

  it('a rename that fails leaves its files staged: `resume-failed` naming the machine, commit-interrupted before a refused login, exit 1', () => {
    const consumerMachine = plan.pairs[2]!.consumerMachine;
    const { state, asked } = walkResume(resumeOf(), {
      receipts: new Set(keys),
      refused: new Set([keys[0]!]),
      renameFails: new Set([consumerMachine]),
    });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    expect(state.resume.failures).toEqual([{ machine: consumerMachine, reason: 'rename failed' }]);
    expect(state.applied).not.toContain(keys[2]);
    expect(asked.some((e) => e.type === 'roll-back')).toBe(false);
    expect(journalPhases(asked)).toEqual(['resume-failed']);
    expect(rotationOutcome(state)).toBe('commit-interrupted');
    expect(ROTATION_EXIT[rotationOutcome(state)]).toBe(EXIT_CODES.failed);
    const record = journalRecord(state, 'resume-failed', { operator: 'op' });
    expect(record.results.find((r) => r.machine === consumerMachine)).toEqual({
      machine: consumerMachine,
      ok: false,
      reason: 'rename failed',
    });
  });

  it('a provider end that cannot be renamed leaves its pairs out of the wait; the others go on: `resume-failed`, exit 1', () => {
    const { state, asked } = walkResume(resumeOf(), {
      receipts: new Set(keys),
      commitFails: new Set(['db2']),
    });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    const onDb2 = plan.pairs.filter((p) => p.providerMachine === 'db2').map((p) => p.key);
    expect(onDb2.length).toBeGreaterThan(0);
    for (const key of onDb2) expect(state.applied).not.toContain(key);
    expect(state.applied).toHaveLength(keys.length - onDb2.length);
    expect(asked.some((e) => e.type === 'roll-back')).toBe(false);
    expect(journalPhases(asked)).toEqual(['resume-failed']);
    expect(rotationExitCode(state)).toBe(EXIT_CODES.failed);
  });

  it('an intent that cannot be recorded closes the gate: nothing renamed, no record, exit 4', () => {
    const unrecorded = [{ machine: 'db1', reason: 'disk full' }];
    const { state, asked } = walkResume(resumeOf([providerEnd(1)]), { receipts: new Set(keys), unrecorded });
    expect(state.step).toBe('gate-closed');
    if (!isTerminal(state)) throw new Error(state.step);
    expect(state.step === 'gate-closed' && state.unrecorded).toEqual(unrecorded);
    expect(asked.map((e) => e.type)).toEqual(['commit']);
    expect(rotationExitCode(state)).toBe(EXIT_CODES['gate-closed']);
  });

  it('pairs read live are finished without a rename and counted already live; once --revoke-previous revoked, a second `resumed` record marks it', () => {
    const { state, asked } = walkResume(resumeOf([providerEnd(0), consumerEnd(0)]), {
      receipts: new Set(keys),
    });
    if (state.step !== 'done' || !state.resume) throw new Error(state.step);
    expect(state.applied[0]).toBe(keys[0]);
    expect(state.windows[keys[0]!]).toBeUndefined();
    expect(state.resume).toMatchObject({ alreadyLive: 2, renamedNow: 4 });
    // finish-apply counts the pair read live among those it records finished.
    const finish = asked.find((e) => e.type === 'finish-apply');
    expect(finish?.type === 'finish-apply' && [...finish.pairs].sort()).toEqual([...keys].sort());
    // The same end with a revoke that took: two records, the second marking the pair.
    const applying = rotation(resumeOf().state, { type: 'committed', tested: [] });
    if (applying.state.step !== 'applying') throw new Error(applying.state.step);
    const revoked = [{ pair: keys[0]!, login: 'web1_app_a', revoked: true as const, sessions: [] }];
    const ended = rotation(
      { ...applying.state, wait: { ...applying.state.wait, over: true } },
      { type: 'apply-finished', failures: [], revoked },
    );
    expect(ended.effects.map((e) => (e.type === 'journal' ? e.phase : e.type))).toEqual([
      'resumed',
      'resumed',
      'discard-previous',
    ]);
    const second = ended.effects[1]!;
    if (second.type !== 'journal') throw new Error(second.type);
    const record = journalRecord(second.state, second.phase, { operator: 'op' });
    expect(record.pairs.find((p) => p.key === keys[0])?.revoked).toBe(true);
  });
});
