/**
 * The receipt wait's decisions alone (receipt-wait-machine.ts), with events in every order a
 * machine, a channel or a clock can give them — hostile ones included: a receipt for a pair not
 * waited for, one after the wait gave up, two for one pair, a channel lost after a receipt.
 */
import { describe, expect, it } from 'vitest';
import type { SecretDigest } from '../../src/mesh/digest.js';
import {
  receiptWait,
  waitBegun,
  waitStarted,
  type WaitEvent,
  type WaitState,
  type WaitStep,
} from '../../src/mesh/receipt-wait-machine.js';

const A = 'pg-main:web1-app';
const B = 'pg-audit:web1-app';
const C = 'pg-main:web2-app';
const digests = {
  [A]: 'sha256:aa',
  [B]: 'sha256:bb',
  [C]: 'sha256:cc',
} as unknown as Record<string, SecretDigest>;
const pairs = [
  { key: A, consumerMachine: 'web1' },
  { key: B, consumerMachine: 'web1' },
  { key: C, consumerMachine: 'web2' },
];

const seen = (pair: string, at = 10, digest: string = digests[pair]!): WaitEvent => ({
  type: 'receipt-seen',
  pair,
  digest,
  appliedAt: at - 5,
  at,
});
const renamed = (machine: string, ...applied: [string, number][]): WaitEvent => ({
  type: 'consumer-renamed',
  machine,
  applied: applied.map(([pair, windowMs]) => ({ pair, windowMs })),
});

/** Feeds events in order; every command and every result along the way. */
function feed(start: WaitStep, events: readonly WaitEvent[]) {
  let step = start;
  const commands = [...start.commands];
  const results = start.result ? [start.result] : [];
  for (const event of events) {
    step = receiptWait(step.state, event);
    commands.push(...step.commands);
    if (step.result) results.push(step.result);
  }
  return { state: step.state, last: step, commands, results };
}

const started = (tested: string[] = [], live = [A, B, C]): WaitStep =>
  waitStarted(waitBegun(pairs, digests), live, tested);

describe('the receipt wait machine', () => {
  it('keeps a receipt seen before any provider end is live, renames nothing, then renames it the moment the wait starts', () => {
    const before = feed({ state: waitBegun(pairs, digests), commands: [], appliedNow: [] }, [seen(A)]);
    expect(before.commands).toEqual([]);
    const start = waitStarted(before.state, [A, B, C], []);
    expect(start.commands).toEqual([
      { type: 'rename-consumer', machine: 'web1', pairs: [{ pair: A, appliedAt: 5, seenAt: 10 }] },
    ]);
    // Started twice: the second start changes nothing.
    expect(waitStarted(start.state, [A], [])).toEqual({ state: start.state, commands: [], appliedNow: [] });
  });

  it('acts on the first matching receipt of a pair only: another digest, an unknown pair or a second receipt change nothing', () => {
    const start = started();
    for (const event of [
      seen(A, 10, 'sha256:other'),
      seen('nobody:here'),
      { type: 'receipt-stale', pair: A } as const,
    ])
      expect(receiptWait(start.state, event)).toEqual({ state: start.state, commands: [], appliedNow: [] });
    const first = receiptWait(start.state, seen(A));
    expect(first.commands.map((c) => c.type)).toEqual(['rename-consumer']);
    const twice = receiptWait(first.state, seen(A, 20));
    expect(twice).toEqual({ state: first.state, commands: [], appliedNow: [] });
  });

  it('renames one batch per consumer machine at a time; receipts arriving meanwhile go in the next batch', () => {
    const run = feed(started(), [seen(A), seen(C), seen(B)]);
    expect(run.commands).toEqual([
      { type: 'rename-consumer', machine: 'web1', pairs: [{ pair: A, appliedAt: 5, seenAt: 10 }] },
      { type: 'rename-consumer', machine: 'web2', pairs: [{ pair: C, appliedAt: 5, seenAt: 10 }] },
    ]);
    const next = receiptWait(run.state, renamed('web1', [A, 7]));
    expect(next.appliedNow).toEqual([{ pair: A, windowMs: 7 }]);
    expect(next.commands).toEqual([
      { type: 'rename-consumer', machine: 'web1', pairs: [{ pair: B, appliedAt: 5, seenAt: 10 }] },
    ]);
    // Every pair renamed: the wait is over before its deadline, and its readers close.
    const end = feed(next, [renamed('web2', [C, 3]), renamed('web1', [B, 4])]);
    expect(end.last.commands).toEqual([{ type: 'close-wait' }]);
    expect(end.results).toEqual([
      {
        applied: [
          { pair: A, windowMs: 7 },
          { pair: C, windowMs: 3 },
          { pair: B, windowMs: 4 },
        ],
        failures: [],
        refused: [],
      },
    ]);
  });

  it('ignores a rename report for a machine not renaming, or naming a pair that is not its own or not receipted', () => {
    const run = feed(started(), [seen(A)]);
    for (const event of [renamed('web2', [C, 1]), renamed('web1', [C, 1])]) {
      const step = receiptWait(run.state, event);
      expect(step.appliedNow).toEqual([]);
    }
    expect(receiptWait(run.state, renamed('web1', [B, 1])).appliedNow).toEqual([]);
  });

  it('tests the login first for a pair whose provider names connect:, renames what passed, and keeps a refused pair staged', () => {
    const run = feed(started([A, B]), [seen(A), seen(C)]);
    expect(run.commands).toEqual([
      { type: 'test-login', machine: 'web1', pairs: [{ pair: A, appliedAt: 5, seenAt: 10 }] },
      { type: 'rename-consumer', machine: 'web2', pairs: [{ pair: C, appliedAt: 5, seenAt: 10 }] },
    ]);
    // B's receipt comes while A's login runs: it gets its own login next, never a rename untested.
    const during = receiptWait(run.state, seen(B));
    expect(during.commands).toEqual([]);
    const passed = receiptWait(during.state, {
      type: 'login-tested',
      machine: 'web1',
      pairs: [A],
      refused: [],
      moved: [],
    });
    expect(passed.commands).toEqual([
      { type: 'rename-consumer', machine: 'web1', pairs: [{ pair: A, appliedAt: 5, seenAt: 10 }] },
    ]);
    const next = receiptWait(passed.state, renamed('web1', [A, 9]));
    expect(next.commands).toEqual([
      { type: 'test-login', machine: 'web1', pairs: [{ pair: B, appliedAt: 5, seenAt: 10 }] },
    ]);
    const refused = feed(next, [
      {
        type: 'login-tested',
        machine: 'web1',
        pairs: [B],
        refused: [{ pair: B, reason: '28P01' }],
        moved: [],
      },
      renamed('web2', [C, 2]),
    ]);
    expect(refused.results).toEqual([
      {
        applied: [
          { pair: A, windowMs: 9 },
          { pair: C, windowMs: 2 },
        ],
        failures: [],
        refused: [{ pair: B, reason: '28P01' }],
      },
    ]);
  });

  it('a pair the machine moved on the login itself is applied with its window, and not renamed again', () => {
    const run = feed(started([A]), [seen(A)]);
    const moved = receiptWait(run.state, {
      type: 'login-tested',
      machine: 'web1',
      pairs: [A],
      refused: [],
      moved: [{ pair: A, windowMs: 4 }],
    });
    expect(moved.appliedNow).toEqual([{ pair: A, windowMs: 4 }]);
    expect(moved.commands).toEqual([]);
  });

  it('a channel lost after a receipt: the rename is tried again after a pause while the wait lasts, never after it gave up', () => {
    const run = feed(started(), [seen(A), { type: 'channel-lost', machine: 'web1', reason: 'gone' }]);
    expect(run.last.commands).toEqual([{ type: 'rename-later', machine: 'web1' }]);
    const due = receiptWait(run.state, { type: 'rename-due', machine: 'web1' });
    // The retry reads the ends back first: the lost rename may have been done (its answer lost).
    expect(due.commands).toEqual([
      {
        type: 'rename-consumer',
        machine: 'web1',
        pairs: [{ pair: A, appliedAt: 5, seenAt: 10 }],
        readBack: true,
      },
    ]);
    // It gives up at --wait while the retry is in flight; the retry fails too: over, the machine named.
    const end = feed(due, [
      { type: 'wait-expired' },
      { type: 'channel-lost', machine: 'web1', reason: 'still gone' },
    ]);
    expect(end.commands).not.toContainEqual({ type: 'rename-later', machine: 'web1' });
    expect(end.results).toEqual([
      { applied: [], failures: [{ machine: 'web1', reason: 'still gone' }], refused: [] },
    ]);
    // A retry that then succeeds clears the machine's failure, and the next rename reads nothing back.
    const healed = feed(due, [renamed('web1', [A, 30])]);
    expect(healed.state.failures.size).toBe(0);
    const next = receiptWait(healed.state, seen(B, 40));
    expect(next.commands).toEqual([
      { type: 'rename-consumer', machine: 'web1', pairs: [{ pair: B, appliedAt: 35, seenAt: 40 }] },
    ]);
    // A channel lost on a machine with nothing in flight is not this wait's.
    const idle = started();
    expect(receiptWait(idle.state, { type: 'channel-lost', machine: 'web2', reason: 'x' }).state).toBe(
      idle.state,
    );
  });

  it('gives up at --wait: over at once with nothing in flight, or once the batch in flight reports; a receipt after that counts for nothing', () => {
    const idle = feed(started(), [{ type: 'wait-expired' }]);
    expect(idle.results).toEqual([{ applied: [], failures: [], refused: [] }]);
    expect(idle.last.commands).toEqual([{ type: 'close-wait' }]);
    const late = receiptWait(idle.state, seen(A));
    expect(late).toEqual({ state: idle.state, commands: [], appliedNow: [] });

    const busy = feed(started(), [seen(A), { type: 'wait-stopped' }]);
    expect(busy.results).toEqual([]);
    // A receipt after the give-up, while A's rename is in flight: not acted on.
    const after = receiptWait(busy.state, seen(C));
    expect(after.commands).toEqual([]);
    const end = receiptWait(after.state, renamed('web1', [A, 12]));
    expect(end.result).toEqual({ applied: [{ pair: A, windowMs: 12 }], failures: [], refused: [] });
    expect(end.commands).toEqual([{ type: 'close-wait' }]);
    // Over: every later event changes nothing.
    const over: WaitState = end.state;
    for (const event of [seen(B), renamed('web1', [B, 1]), { type: 'wait-expired' } as const])
      expect(receiptWait(over, event)).toEqual({ state: over, commands: [], appliedNow: [] });
  });

  it('only pairs whose provider end is live move; a wait with none live is over as it starts', () => {
    const some = feed(started([], [C]), [seen(A), seen(C)]);
    expect(some.commands).toEqual([
      { type: 'rename-consumer', machine: 'web2', pairs: [{ pair: C, appliedAt: 5, seenAt: 10 }] },
    ]);
    const none = started([], []);
    expect(none.result).toEqual({ applied: [], failures: [], refused: [] });
  });
});
