import { describe, expect, it, vi } from 'vitest';
import {
  canQuit,
  isWorking,
  isWritingFiles,
  rotationExitCode,
  exitCodeOnLeave,
  isTerminal,
  outcomeOnLeave,
  rotation,
  rotationOutcome,
  ROTATION_EXIT,
  startRotation,
  type RotationEvent,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import { EXIT_CODES, EXIT_OK } from '../../src/errors.js';
import type { SecretDigest } from '../../src/mesh/digest.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from './mesh-fixture.js';

const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' }); // 2 pairs, 3 holders
const digests = { 'pg-main:web1-app': 'sha256:aa', 'pg-audit:web1-app': 'sha256:bb' } as unknown as Record<
  string,
  SecretDigest
>;

function walk(events: RotationEvent[]) {
  let step = startRotation('r1', plan);
  const effects = [...step.effects];
  for (const e of events) {
    step = rotation(step.state, e);
    effects.push(...step.effects);
  }
  return { state: step.state, last: step.effects, effects };
}

const resolved = (m: string): RotationEvent => ({
  type: 'holder-resolved',
  machine: m,
  resolution: { status: 'resolved' },
});
const allResolved = plan.holders.map((h) => resolved(h.machine));

/** A pair's receipt, then its consumer's rename reported by the wait's effect: how a pair is applied. */
function appliedBy(pair: string, windowMs: number): RotationEvent[] {
  const machine = plan.pairs.find((p) => p.key === pair)!.consumerMachine;
  return [
    { type: 'receipt-seen', pair, digest: digests[pair]!, appliedAt: 0, at: 0 },
    { type: 'consumer-renamed', machine, applied: [{ pair, windowMs }] },
  ];
}
const livePaths = (provider: string) =>
  plan.pairs.filter((p) => p.providerMachine === provider).map((p) => p.providerPath);

const everyEvent: RotationEvent[] = [
  ...allResolved,
  { type: 'holder-resolved', machine: 'db1', resolution: { status: 'unresolved', reason: 'x' } },
  { type: 'typed', text: '2' },
  { type: 'confirmed' },
  { type: 'back' },
  { type: 'staged', machine: 'db1' },
  { type: 'prepared', digests },
  { type: 'prepare-failed', failures: [], unstageFailures: [] },
  { type: 'committed-step', machine: 'db1', end: 'provides', paths: [] },
  { type: 'committed' },
  { type: 'commit-failed', failures: [] },
  ...appliedBy('pg-main:web1-app', 40),
  { type: 'wait-expired' },
  { type: 'apply-finished', failures: [] },
];

describe('the rotation flow', () => {
  it('starts by resolving every holder and nothing else', () => {
    const start = startRotation('r1', plan);
    expect(start.state.step).toBe('resolving');
    expect(start.effects).toEqual([{ type: 'resolve' }]);
  });

  it('closes the gate when the last answer is in and one holder is unresolved; no prepare ever follows', () => {
    const { state, effects } = walk([
      resolved('db1'),
      { type: 'holder-resolved', machine: 'web1', resolution: { status: 'unresolved', reason: 'refused' } },
      resolved('db2'),
    ]);
    expect(state.step).toBe('gate-closed');
    expect(effects.map((e) => e.type)).toEqual(['resolve', 'journal']);
    for (const e of everyEvent) expect(rotation(state, e)).toEqual({ state, effects: [] });
    expect(isTerminal(state) && rotationExitCode(state)).toBe(4);
  });

  it('confirms only when the typed text is the number of credentials', () => {
    const { state } = walk([...allResolved, { type: 'typed', text: '3' }]);
    expect(state.step).toBe('confirming');
    expect(rotation(state, { type: 'confirmed' })).toEqual({ state, effects: [] });
    const ok = rotation({ ...state, typed: '2' } as RotationState, { type: 'confirmed' });
    expect(ok.state.step).toBe('preparing');
    expect(ok.effects).toEqual([{ type: 'prepare' }]);
  });

  it('Esc while confirming cancels with nothing generated (exit 3); q cannot quit while typing', () => {
    const { state } = walk([...allResolved]);
    expect(canQuit(state)).toBe(false);
    const back = rotation(state, { type: 'back' });
    expect(back.state.step).toBe('cancelled');
    expect(back.effects.map((e) => e.type)).toEqual(['journal']);
    expect(isTerminal(back.state) && rotationExitCode(back.state)).toBe(3);
  });

  it('the views read one rule for working, writing files and quitting: the spinner turns unless the operator is asked or it ended; q waits for a phase that writes files', () => {
    const seen: Record<string, [boolean, boolean, boolean]> = {};
    const steps: RotationEvent[] = [
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'staged', machine: 'db1' },
      { type: 'prepared', digests },
    ];
    let state = startRotation('r1', plan).state;
    seen[state.step] = [isWorking(state), isWritingFiles(state), canQuit(state)];
    for (const event of steps) {
      state = rotation(state, event).state;
      seen[state.step] = [isWorking(state), isWritingFiles(state), canQuit(state)];
    }
    const cancelled = rotation(walk([...allResolved]).state, { type: 'back' }).state;
    seen[cancelled.step] = [isWorking(cancelled), isWritingFiles(cancelled), canQuit(cancelled)];
    expect(seen).toEqual({
      resolving: [true, false, true],
      confirming: [false, false, false],
      preparing: [true, true, false],
      committing: [true, true, false],
      cancelled: [false, false, true],
    });
  });

  it('walks prepare → provider commit → receipts and consumer commits, journaling each phase and each window, and ignores events out of turn', () => {
    const { state, effects } = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'committed' }, // out of turn: ignored
      ...appliedBy('pg-main:web1-app', 5), // out of turn: ignored
      { type: 'staged', machine: 'db1' },
      { type: 'prepared', digests },
      { type: 'journaled', phase: 'prepared' }, // the commit starts only once the 'prepared' record is on disk
      { type: 'committed-step', machine: 'db1', end: 'provides', paths: livePaths('db1') },
      { type: 'committed-step', machine: 'db2', end: 'provides', paths: livePaths('db2') },
      { type: 'committed' },
      ...appliedBy('pg-main:web1-app', 42),
      ...appliedBy('pg-main:web1-app', 99), // the first report of a pair counts
      { type: 'apply-finished', failures: [] },
    ]);
    // One of two providers confirmed within the wait: the other pair is rolled back, never left waiting.
    expect(state.step).toBe('rolling-back');
    expect(effects.filter((e) => e.type !== 'journal').map((e) => e.type)).toEqual([
      'resolve',
      'prepare',
      'commit',
      'await-receipts',
      'rename-consumer',
      'roll-back',
    ]);
    expect(effects.at(-1)).toEqual({ type: 'roll-back', pairs: ['pg-audit:web1-app'] });
    const rolled = rotation(state, {
      type: 'rolled-back',
      results: [{ pair: 'pg-audit:web1-app', result: 'rolled-back', receipt: 'old' }],
    });
    expect(rolled.effects.map((e) => (e.type === 'journal' ? e.phase : e.type))).toEqual([
      'rolled-back',
      'discard-previous',
    ]);
    expect(rolled.effects[1]).toEqual({ type: 'discard-previous', pairs: ['pg-main:web1-app'] });
    expect(effects.filter((e) => e.type === 'journal').map((e) => e.phase)).toEqual([
      'resolved',
      'prepared',
      'committed',
    ]);
    expect(rolled.state.step === 'rolled-back' && [rolled.state.applied, rolled.state.windows]).toEqual([
      ['pg-main:web1-app'],
      { 'pg-main:web1-app': 42 },
    ]);
    expect(
      isTerminal(rolled.state) && [rotationOutcome(rolled.state), rotationExitCode(rolled.state)],
    ).toEqual(['taken-back', 3]);
    expect(JSON.stringify(state)).not.toMatch(/secret/i);
    const all = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
      { type: 'journaled', phase: 'prepared' },
      { type: 'committed-step', machine: 'db1', end: 'provides', paths: livePaths('db1') },
      { type: 'committed-step', machine: 'db2', end: 'provides', paths: livePaths('db2') },
      { type: 'committed' },
      ...appliedBy('pg-main:web1-app', 1),
      ...appliedBy('pg-audit:web1-app', 2),
      { type: 'apply-finished', failures: [] },
    ]).state;
    expect(isTerminal(all) && rotationExitCode(all)).toBe(0);
  });

  it('a pair that could not be rolled back (a machine unreachable) ends as unfinished, exit 3', () => {
    const applying = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
      { type: 'journaled', phase: 'prepared' },
      { type: 'committed', previous: { 'pg-main:web1-app': 'sha256:old' as SecretDigest } },
    ]).state;
    expect(applying.step === 'applying' && applying.previous).toEqual({ 'pg-main:web1-app': 'sha256:old' });
    const rolling = rotation(applying, {
      type: 'apply-finished',
      failures: [],
      stopped: 'interrupted by SIGHUP',
    }).state;
    expect(rolling.step === 'rolling-back' && rolling.stopped).toBe('interrupted by SIGHUP');
    const ended = rotation(rolling, {
      type: 'rolled-back',
      results: [
        { pair: 'pg-main:web1-app', result: 'provider-unknown', reason: 'db1: no answer' },
        { pair: 'pg-audit:web1-app', result: 'rolled-back', receipt: 'new' },
      ],
    }).state;
    expect(isTerminal(ended) && [rotationOutcome(ended), rotationExitCode(ended)]).toEqual(['unfinished', 3]);
  });

  it('a failed prepare ends at exit 4 and a failed commit is rolled back, each journaled', () => {
    const prep = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepare-failed', failures: [{ machine: 'db2', reason: 'disk full' }], unstageFailures: [] },
    ]);
    expect(prep.state.step).toBe('prepare-failed');
    expect(isTerminal(prep.state) && rotationExitCode(prep.state)).toBe(4);
    // A provider end that could not be renamed: the other pairs still wait for their receipts.
    const commit = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
      { type: 'commit-failed', failures: [{ machine: 'db2', reason: 'gone' }] },
    ]);
    expect(commit.state.step).toBe('applying');
    // No provider end is live: the wait is over as it starts.
    expect(commit.last.map((e) => e.type)).toEqual(['await-receipts', 'close-wait', 'journal']);
    const ended = rotation(commit.state, { type: 'apply-finished', failures: [] });
    expect(ended.state.step).toBe('rolling-back');
    expect(ended.effects).toEqual([{ type: 'roll-back', pairs: ['pg-main:web1-app', 'pg-audit:web1-app'] }]);
    // A consumer end that could not be renamed after its receipt: the same.
    const applying = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
      { type: 'committed' },
    ]).state;
    const consumerFailed = rotation(applying, {
      type: 'apply-finished',
      failures: [{ machine: 'web1', reason: 'gone' }],
    }).state;
    expect(consumerFailed.step === 'rolling-back' && consumerFailed.failures).toEqual([
      { machine: 'web1', reason: 'gone' },
    ]);
  });

  it('leaving mid-commit exits 1 (something may be left to resume), leaving earlier exits 3, a finished rotation keeps its own code', () => {
    const confirming = walk([...allResolved]).state;
    const preparing = walk([...allResolved, { type: 'typed', text: '2' }, { type: 'confirmed' }]).state;
    const committing = walk([
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
    ]).state;
    const closed = walk([
      resolved('db1'),
      { type: 'holder-resolved', machine: 'web1', resolution: { status: 'unresolved', reason: 'refused' } },
      resolved('db2'),
    ]).state;
    expect([confirming, preparing, committing, closed].map((s) => [s.step, exitCodeOnLeave(s)])).toEqual([
      ['confirming', 3],
      ['preparing', 3],
      ['committing', 1],
      ['gate-closed', 4],
    ]);
  });
});

describe('rotation outcomes', () => {
  it('each way a rotation ends has a name, and its exit code comes from EXIT_CODES through that name', () => {
    const confirmed: RotationEvent[] = [...allResolved, { type: 'typed', text: '2' }, { type: 'confirmed' }];
    const ends = [
      walk([...allResolved, { type: 'back' }]).state,
      walk([...confirmed, { type: 'prepare-failed', failures: [], unstageFailures: [] }]).state,
      walk([
        ...confirmed,
        { type: 'prepared', digests },
        { type: 'journaled', phase: 'prepared' },
        { type: 'committed' },
        { type: 'apply-finished', failures: [] },
        { type: 'rolled-back', results: [] },
      ]).state,
    ];
    expect(ends.map((s) => (isTerminal(s) ? rotationOutcome(s) : s.step))).toEqual([
      'cancelled',
      'rolled-back',
      'taken-back',
    ]);
    expect(ends.map((s) => isTerminal(s) && rotationExitCode(s))).toEqual([
      EXIT_CODES.aborted,
      EXIT_CODES['gate-closed'],
      EXIT_CODES['action-needed'],
    ]);
    const committing = walk([...confirmed, { type: 'prepared', digests }]).state;
    expect([outcomeOnLeave(walk(confirmed).state), outcomeOnLeave(committing)]).toEqual([
      'left',
      'left-during-commit',
    ]);
    expect(ROTATION_EXIT.rotated).toBe(EXIT_OK);
    expect(ROTATION_EXIT['journal-failed']).toBe(EXIT_CODES.failed);
  });
});

describe('the rotation on the flow runtime', () => {
  it('after stop, the prepare in flight finishes and is journaled, but no commit ever starts', async () => {
    const { rotationFlow } = await import('../../src/app/rotation-flow.js');
    const ran: string[] = [];
    let finishPrepare: () => void = () => undefined;
    const store = rotationFlow(startRotation('r1', plan), {
      async run(effect, { dispatch }) {
        ran.push(effect.type === 'journal' ? `journal:${effect.phase}` : effect.type);
        if (effect.type === 'resolve') for (const e of allResolved) dispatch(e);
        if (effect.type === 'journal') return { type: 'journaled', phase: effect.phase };
        if (effect.type === 'prepare') {
          await new Promise<void>((resolve) => {
            finishPrepare = resolve;
          });
          return { type: 'prepared', digests };
        }
        return undefined;
      },
      failed: (_effect, error) => {
        throw error;
      },
    });
    await vi.waitFor(() => expect(store.getState().step).toBe('confirming'), { timeout: 10_000 });
    store.dispatch({ type: 'typed', text: '2' });
    store.dispatch({ type: 'confirmed' });
    await vi.waitFor(() => expect(ran).toContain('prepare'), { timeout: 10_000 });
    store.stop();
    finishPrepare();
    await store.idle();
    expect(ran).toEqual(['resolve', 'journal:resolved', 'prepare', 'journal:prepared']);
    expect(store.getState().step).toBe('committing');
  });

  it('the reducer decides when the consumer renames start and when the apply phase closes: renames at the provider commit, beside the record; the close once both the renames ended and the record is on disk, in either order', () => {
    const upToCommit: RotationEvent[] = [
      ...allResolved,
      { type: 'typed', text: '2' },
      { type: 'confirmed' },
      { type: 'prepared', digests },
      { type: 'journaled', phase: 'prepared' },
      { type: 'committed-step', machine: 'db1', end: 'provides', paths: [plan.pairs[0]!.providerPath] },
      { type: 'committed' },
    ];
    const committed = walk(upToCommit);
    // Only the pair whose provider end is live is renamed; the record is asked for beside it.
    expect(committed.last).toEqual([
      { type: 'await-receipts', pairs: [plan.pairs[0]!.key] },
      expect.objectContaining({ type: 'journal', phase: 'committed' }),
    ]);
    // The wait gives up at --wait with nothing renamed: the wait is over.
    const renamed: RotationEvent = { type: 'wait-expired' };
    const recorded: RotationEvent = { type: 'journaled', phase: 'committed' };
    const finish = { type: 'finish-apply', pairs: [plan.pairs[0]!.key], failures: [] };
    for (const order of [
      [renamed, recorded],
      [recorded, renamed],
    ]) {
      const first = rotation(committed.state, order[0]!);
      expect(first.effects.filter((e) => e.type !== 'close-wait')).toEqual([]);
      expect(rotation(first.state, order[1]!).effects.filter((e) => e.type !== 'close-wait')).toEqual([
        finish,
      ]);
    }
    // The record failed after the wait ended: what was renamed is settled (its intent says finished).
    const [seen, renamedOne] = appliedBy(plan.pairs[0]!.key, 3);
    const applied = rotation(rotation(committed.state, seen!).state, renamedOne!);
    const ended = rotation(applied.state, renamed);
    const failed = rotation(ended.state, {
      type: 'journal-failed',
      phase: 'committed',
      journal: { what: 'disk full', where: '/j', next: 'free it' },
    });
    expect(failed.state.step).toBe('journal-failed');
    expect(failed.effects).toEqual([{ type: 'settle-renamed', pairs: [plan.pairs[0]!.key] }]);
    // The record failed while a rename was in flight: the wait is closed, and the batch, when it
    // reports, is settled then.
    const inFlight = rotation(committed.state, seen!);
    expect(inFlight.effects).toEqual([
      {
        type: 'rename-consumer',
        machine: 'web1',
        pairs: [{ pair: plan.pairs[0]!.key, appliedAt: 0, seenAt: 0 }],
      },
    ]);
    const failedFirst = rotation(inFlight.state, {
      type: 'journal-failed',
      phase: 'committed',
      journal: { what: 'disk full', where: '/j', next: 'free it' },
    });
    expect(failedFirst.effects).toEqual([{ type: 'close-wait' }]);
    expect(rotation(failedFirst.state, renamedOne!).effects).toEqual([
      { type: 'settle-renamed', pairs: [plan.pairs[0]!.key] },
    ]);
  });
});

describe('the receipt wait inside the rotation', () => {
  const upToPrepared: RotationEvent[] = [
    ...allResolved,
    { type: 'typed', text: '2' },
    { type: 'confirmed' },
    { type: 'prepared', digests },
    { type: 'journaled', phase: 'prepared' },
  ];
  const everyProvider: RotationEvent[] = [
    { type: 'committed-step', machine: 'db1', end: 'provides', paths: livePaths('db1') },
    { type: 'committed-step', machine: 'db2', end: 'provides', paths: livePaths('db2') },
  ];
  const [A, B] = [plan.pairs[0]!.key, plan.pairs[1]!.key];
  const seenA: RotationEvent = { type: 'receipt-seen', pair: A, digest: digests[A]!, appliedAt: 1, at: 2 };

  it('a receipt seen while other providers still commit is kept, and renamed the moment the commit answers', () => {
    const early = walk([...upToPrepared, everyProvider[0]!, seenA]);
    expect(early.state.step).toBe('committing');
    expect(early.last).toEqual([]);
    const committed = rotation(rotation(early.state, everyProvider[1]!).state, { type: 'committed' });
    expect(committed.effects.map((e) => e.type)).toEqual(['await-receipts', 'rename-consumer', 'journal']);
    expect(committed.effects[1]).toEqual({
      type: 'rename-consumer',
      machine: 'web1',
      pairs: [{ pair: A, appliedAt: 1, seenAt: 2 }],
    });
  });

  it('a pair whose provider names connect: is tried first; refused, it stays staged and is rolled back when the phase closes', () => {
    const applying = walk([...upToPrepared, ...everyProvider, { type: 'committed', tested: [A] }]);
    const login = rotation(applying.state, seenA);
    expect(login.effects).toEqual([
      { type: 'test-login', machine: 'web1', pairs: [{ pair: A, appliedAt: 1, seenAt: 2 }] },
    ]);
    const refused = run(login.state, [
      {
        type: 'login-tested',
        machine: 'web1',
        pairs: [A],
        refused: [{ pair: A, reason: 'refused' }],
        moved: [],
      },
      { type: 'receipt-seen', pair: B, digest: digests[B]!, appliedAt: 1, at: 3 },
      { type: 'consumer-renamed', machine: 'web1', applied: [{ pair: B, windowMs: 6 }] },
    ]);
    // Every live pair renamed or refused: the wait is over; with the record on disk the phase closes.
    const closed = rotation(refused, { type: 'journaled', phase: 'committed' });
    expect(closed.effects).toEqual([{ type: 'finish-apply', pairs: [A, B], failures: [] }]);
    const finished = rotation(closed.state, { type: 'apply-finished', failures: [] });
    expect(finished.state.step).toBe('rolling-back');
    expect(finished.effects).toEqual([{ type: 'roll-back', pairs: [A] }]);
    // A receipt or a rename report that comes after the wait gave up changes nothing.
    for (const late of [
      seenA,
      { type: 'consumer-renamed', machine: 'web1', applied: [{ pair: A, windowMs: 1 }] },
    ] as const)
      expect(rotation(finished.state, late)).toEqual({ state: finished.state, effects: [] });
  });

  it('gives up at --wait: the pairs without a receipt are rolled back once the record is on disk', () => {
    const applying = walk([...upToPrepared, ...everyProvider, { type: 'committed' }]);
    const expired = run(applying.state, [{ type: 'journaled', phase: 'committed' }]);
    const closed = rotation(expired, { type: 'wait-expired' });
    expect(closed.effects).toEqual([
      { type: 'close-wait' },
      { type: 'finish-apply', pairs: [A, B], failures: [] },
    ]);
  });
});

function run(state: RotationState, events: readonly RotationEvent[]): RotationState {
  return events.reduce((s, e) => rotation(s, e).state, state);
}
