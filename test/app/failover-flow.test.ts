import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import {
  canQuit,
  failover,
  failoverExitCode,
  initialFailover,
  offeredActions,
  type FailoverEvent,
  type FailoverState,
} from '../../src/app/failover-flow.js';
import { FP_A, FP_OLD, READS, STATE_DIR } from './status-fixtures.js';

const AT = new Date('2026-11-30T10:31:02.456Z');
const storeChanged = new BatonError('store-changed', {
  what: 'The store changed since you looked.',
  next: 'Re-read and decide again.',
});

function walk(state: FailoverState, ...events: FailoverEvent[]): FailoverState {
  return events.reduce((s, e) => failover(s, e).state, state);
}

const deciding = (reading = READS.leftBehind()) => walk(initialFailover.state, { type: 'read', reading });
const forceGate = () => walk(deciding(), { type: 'move', by: 1 }, { type: 'select', at: AT });
/** READS.leftBehind is a CLAIMED left-behind (no handover signature): either side may be kept. */
const pushGate = () =>
  walk(deciding(), { type: 'move', by: 1 }, { type: 'move', by: 1 }, { type: 'select', at: AT });

/** A sample of every step, so the table below covers each (state × event) pair. */
function everyState(): FailoverState[] {
  const adoptDeciding = deciding(READS.adopt());
  return [
    initialFailover.state,
    deciding(),
    walk(adoptDeciding, { type: 'select', at: AT }),
    forceGate(),
    walk(forceGate(), { type: 'typed', text: FP_OLD.slice(7, 15) }),
    pushGate(),
    walk(pushGate(), { type: 'typed', text: FP_A.slice(7, 15) }),
    walk(adoptDeciding, { type: 'select', at: AT }, { type: 'confirm' }),
    walk(
      adoptDeciding,
      { type: 'select', at: AT },
      { type: 'confirm' },
      { type: 'acted', outcome: { kind: 'installed', fingerprint: FP_A } },
    ),
    walk(
      adoptDeciding,
      { type: 'select', at: AT },
      { type: 'confirm' },
      { type: 'act-failed', error: storeChanged },
    ),
  ];
}

const EVERY_EVENT: FailoverEvent[] = [
  { type: 'read', reading: READS.inSync() },
  { type: 'read-failed', error: storeChanged },
  { type: 'move', by: 1 },
  { type: 'move', by: -1 },
  { type: 'select', at: AT },
  { type: 'typed', text: 'wrong' },
  { type: 'confirm' },
  { type: 'back' },
  { type: 'refresh' },
  { type: 'acted', outcome: { kind: 'installed', fingerprint: FP_A } },
  { type: 'act-failed', error: storeChanged },
  { type: 'reread', reading: READS.inSync() },
  { type: 'reread-failed', error: storeChanged },
];

describe('the failover walk as a reducer', () => {
  it('starts by reading, and nothing else', () => {
    expect(initialFailover.state.step).toBe('reading');
    expect(initialFailover.effects).toEqual([{ type: 'read' }]);
  });

  it('writes only from a confirm on the confirm screen or on an unlocked force or push-over gate, across every state and event', () => {
    for (const state of everyState()) {
      for (const event of EVERY_EVENT) {
        const { state: next, effects } = failover(state, event);
        const writes = effects.filter((e) => e.type === 'act');
        const mayWrite =
          event.type === 'confirm' &&
          (state.step === 'confirming' ||
            ((state.step === 'confirming-force' || state.step === 'confirming-push') &&
              next.step === 'acting'));
        expect(writes.length, `${state.step} × ${event.type}`).toBe(mayWrite ? 1 : 0);
      }
    }
  });

  it('leaves a state untouched with no effects when an event does not apply to it', () => {
    const refusals: [FailoverState, FailoverEvent][] = [
      [initialFailover.state, { type: 'confirm' }],
      [initialFailover.state, { type: 'back' }],
      [deciding(), { type: 'confirm' }],
      [deciding(), { type: 'back' }],
      [deciding(), { type: 'typed', text: 'abc' }],
      [forceGate(), { type: 'select', at: AT }],
      [forceGate(), { type: 'acted', outcome: { kind: 'installed', fingerprint: FP_A } }],
      [pushGate(), { type: 'select', at: AT }],
      [pushGate(), { type: 'refresh' }],
    ];
    for (const [state, event] of refusals) {
      const step = failover(state, event);
      expect(step.state, `${state.step} × ${event.type}`).toBe(state);
      expect(step.effects).toEqual([]);
    }
  });

  it('Enter, Enter, Enter on a fresh host with nothing published mints nothing: the cursor starts on leave', () => {
    let state = deciding(READS.firstController());
    expect(state.step === 'deciding' && state.actions[state.cursor]).toBe('leave');
    const effects = [];
    for (let i = 0; i < 3; i++) {
      const step = failover(state, i === 0 ? { type: 'select', at: AT } : { type: 'confirm' });
      effects.push(...step.effects);
      state = step.state;
    }
    expect(effects.filter((e) => e.type === 'act')).toEqual([]);
  });

  it('minting a first authority asks for the first 8 characters of the deployment id, and says why a wrong entry is refused', () => {
    const reading = { ...READS.firstController(), deployment: 'payments-eu-1' };
    const confirming = walk(deciding(reading), { type: 'move', by: -1 }, { type: 'select', at: AT });
    expect(confirming.step === 'confirming' && confirming.gated).toBe(true);
    const bare = failover(confirming, { type: 'confirm' });
    expect(bare.effects).toEqual([]);
    expect(bare.state.step === 'confirming' && bare.state.refusal).toMatch(
      /first 8 characters of the deployment id/,
    );
    const wrong = failover(walk(confirming, { type: 'typed', text: 'payment' }), { type: 'confirm' });
    expect(wrong.effects).toEqual([]);
    expect(wrong.state.step === 'confirming' && wrong.state.refusal).toMatch(
      /expected 8 characters, you typed 7/,
    );
    // Eight characters, two of them wrong: the refusal says which, not "expected 8, you typed 8".
    const sameCount = failover(walk(confirming, { type: 'typed', text: 'paymXnts' }), { type: 'confirm' });
    expect(sameCount.effects).toEqual([]);
    const said = sameCount.state.step === 'confirming' ? sameCount.state.refusal : undefined;
    expect(said).toContain('the right number of characters, but character 5 differs');
    expect(said).not.toMatch(/you typed 8/);
    const right = failover(walk(wrong.state, { type: 'typed', text: 'payments' }), { type: 'confirm' });
    expect(right.effects).toEqual([
      { type: 'act', action: 'first-controller', seen: reading.verdict, at: undefined },
    ]);
  });

  it('adopting over the lost marker is gated the same way and is never the default; a plain adopt is not gated', () => {
    const lost = deciding(READS.adoptLost());
    expect(lost.step === 'deciding' && lost.actions[lost.cursor]).toBe('leave');
    const gated = walk(lost, { type: 'move', by: -1 }, { type: 'select', at: AT });
    expect(gated.step === 'confirming' && gated.gated).toBe(true);
    expect(failover(gated, { type: 'confirm' }).effects).toEqual([]);
    expect(failover(walk(gated, { type: 'typed', text: 'd1' }), { type: 'confirm' }).effects).toHaveLength(1);
    const plain = walk(deciding(READS.adopt()), { type: 'select', at: AT });
    expect(plain.step === 'confirming' && plain.gated).toBe(false);
  });

  it('a wrong entry at the force gate says why: the PUBLISHED prefix, or how many characters were typed', () => {
    const published = walk(forceGate(), { type: 'typed', text: FP_A.slice(7, 15) }, { type: 'confirm' });
    expect(published.step === 'confirming-force' && published.refusal).toMatch(
      /That is the PUBLISHED fingerprint/,
    );
    const short = failover(walk(forceGate(), { type: 'typed', text: '0ld0' }), { type: 'confirm' });
    expect(short.effects).toEqual([]);
    expect(short.state.step === 'confirming-force' && short.state.refusal).toMatch(
      /Expected 8 characters, you typed 4/,
    );
    const retyped = failover(short.state, { type: 'typed', text: '0ld0l' });
    expect(retyped.state.step === 'confirming-force' && retyped.state.refusal).toBeUndefined();
  });

  it('offers only the actions the decision table allows, with the cursor kept inside them', () => {
    const s = deciding(READS.leftBehind());
    expect(s.step === 'deciding' && s.actions).toEqual(['leave', 'force', 'push-over']);
    const moved = walk(s, { type: 'move', by: 1 }, { type: 'move', by: 1 }, { type: 'move', by: 1 });
    expect(moved.step === 'deciding' && moved.cursor).toBe(2);
    const back = walk(moved, { type: 'move', by: -1 }, { type: 'move', by: -1 }, { type: 'move', by: -1 });
    expect(back.step === 'deciding' && back.cursor).toBe(0);
    expect(offeredActions(READS.ahead())).toEqual(['publish', 'leave', 'force']);
    expect(offeredActions(READS.inSync())).toEqual(['leave']);
    expect(offeredActions(READS.firstController())).toEqual(['first-controller', 'leave']);
  });

  it('keeps the push-over gate closed until the PUBLISHED prefix is typed, the one `sync --push --confirm` takes', () => {
    const gate = pushGate();
    expect(gate.step).toBe('confirming-push');
    // The LOCAL prefix (the force gate's) is refused by name; a bare Enter asks for the value.
    const local = failover(walk(gate, { type: 'typed', text: FP_OLD.slice(7, 15) }), { type: 'confirm' });
    expect(local.effects).toEqual([]);
    expect(local.state.step === 'confirming-push' && local.state.refusal).toContain(
      'That is the LOCAL fingerprint',
    );
    const bare = failover(gate, { type: 'confirm' });
    expect(bare.state.step === 'confirming-push' && bare.state.refusal).toBe(
      'Type the 8 characters marked "type these" (PUBLISHED) first.',
    );
    const open = failover(walk(gate, { type: 'typed', text: ` ${FP_A.slice(7, 15)} ` }), { type: 'confirm' });
    expect(open.state.step).toBe('acting');
    expect(open.effects).toEqual([
      { type: 'act', action: 'push-over', seen: READS.leftBehind().verdict, at: undefined },
    ]);
  });

  it('backs out of the push-over gate onto Leave with no effect: Enter again leaves', () => {
    const back = failover(walk(pushGate(), { type: 'typed', text: FP_A.slice(7, 15) }), { type: 'back' });
    expect(back.effects).toEqual([]);
    expect(back.state.step === 'deciding' && back.state.actions[back.state.cursor]).toBe('leave');
    const again = failover(back.state, { type: 'select', at: AT });
    expect(again.state.step === 'done' && again.state.outcome.kind).toBe('left');
  });

  it('offers only "leave" while another process holds the lock', () => {
    const busy = {
      ...READS.adopt(),
      lock: {
        state: 'busy' as const,
        error: new BatonError('lock-busy', { what: 'held', where: `${STATE_DIR}/ca.lock` }),
      },
    };
    expect(offeredActions(busy)).toEqual(['leave']);
  });

  it('adopts only after select then confirm, and asks for a re-read once it acted', () => {
    const reading = READS.adopt();
    const confirming = walk(deciding(reading), { type: 'select', at: AT });
    expect(confirming.step).toBe('confirming');
    const acting = failover(confirming, { type: 'confirm' });
    expect(acting.state.step).toBe('acting');
    expect(acting.effects).toEqual([{ type: 'act', action: 'adopt', seen: reading.verdict, at: undefined }]);
    const done = failover(acting.state, { type: 'acted', outcome: { kind: 'installed', fingerprint: FP_A } });
    expect(done.state.step).toBe('done');
    expect(done.effects).toEqual([{ type: 'reread' }]);
    const after = failover(done.state, { type: 'reread', reading: READS.inSync() });
    expect(after.state.step === 'done' && after.state.after?.verdict.kind).toBe('in-sync');
    expect(failoverExitCode(after.state)).toBe(0);
  });

  it.each([
    ['adopt', READS.adopt],
    ['publish', READS.publish],
    ['publish (ahead)', READS.ahead],
    ['first-controller', READS.firstController],
  ] as const)(
    'backs out of the %s confirm onto Leave, having written nothing: Enter again leaves',
    (_, read) => {
      // The confirm's action is first in the list; the cursor may start on Leave (a mint).
      const confirming = walk(deciding(read()), { type: 'move', by: -1 }, { type: 'select', at: AT });
      expect(confirming.step).toBe('confirming');
      const step = failover(confirming, { type: 'back' });
      expect(step.state.step).toBe('deciding');
      expect(step.effects).toEqual([]);
      expect(step.state.step === 'deciding' && step.state.actions[step.state.cursor]).toBe('leave');
      const again = failover(step.state, { type: 'select', at: AT });
      expect(again.state.step === 'done' && again.state.outcome.kind).toBe('left');
      expect(again.effects).toEqual([]);
    },
  );

  it('keeps the force gate closed until the first 8 characters after SHA256: of the LOCAL fingerprint are typed', () => {
    const gate = forceGate();
    expect(gate.step).toBe('confirming-force');
    const local = FP_OLD.slice(7, 15);
    for (const wrong of ['', local.slice(0, 7), FP_A.slice(7, 15), `${local}x`, 'SHA256:' + local]) {
      const typed = walk(gate, { type: 'typed', text: wrong });
      const step = failover(typed, { type: 'confirm' });
      expect(step.effects, `typed "${wrong}"`).toEqual([]);
      expect(step.state.step).toBe('confirming-force');
    }
    const right = walk(gate, { type: 'typed', text: `  ${local} ` });
    const step = failover(right, { type: 'confirm' });
    expect(step.state.step).toBe('acting');
    expect(step.effects).toEqual([
      { type: 'act', action: 'force', seen: READS.leftBehind().verdict, at: AT },
    ]);
  });

  it('refuses the right characters in the wrong case, and says that is why', () => {
    const local = FP_OLD.slice(7, 15);
    const swapped = [...local]
      .map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()))
      .join('');
    expect(swapped).not.toBe(local);
    const step = failover(walk(forceGate(), { type: 'typed', text: swapped }), { type: 'confirm' });
    expect(step.effects).toEqual([]);
    expect(step.state.step).toBe('confirming-force');
    expect(step.state.step === 'confirming-force' && step.state.refusal).toMatch(
      /same letters .* not the same case/,
    );
  });

  it('backs out of the force gate without an effect, onto the safe choice: Enter again does not reopen the gate', () => {
    const typed = walk(forceGate(), { type: 'typed', text: FP_OLD.slice(7, 15) });
    const step = failover(typed, { type: 'back' });
    expect(step.state.step).toBe('deciding');
    expect(step.effects).toEqual([]);
    const first = deciding();
    expect(
      step.state.step === 'deciding' && first.step === 'deciding' && step.state.cursor === first.cursor,
    ).toBe(true);
    const again = failover(step.state, { type: 'select', at: AT });
    expect(again.state.step).toBe('done');
    expect(again.effects).toEqual([]);
    // Choosing force once more opens a fresh gate: what was typed is forgotten.
    const reopened = walk(step.state, { type: 'move', by: 1 }, { type: 'select', at: AT });
    expect(reopened.step === 'confirming-force' && reopened.typed).toBe('');
  });

  it('leaves without a confirm, a lock or a write', () => {
    const step = failover(deciding(READS.leftBehind()), { type: 'select', at: AT });
    expect(step.state.step).toBe('done');
    expect(step.effects).toEqual([]);
    expect(step.state.step === 'done' && step.state.outcome.kind).toBe('left');
    expect(failoverExitCode(step.state)).toBe(3);
  });

  it('turns a failed act into a failure screen whose back re-reads and decides again', () => {
    const failed = walk(
      deciding(READS.adopt()),
      { type: 'select', at: AT },
      { type: 'confirm' },
      { type: 'act-failed', error: storeChanged },
    );
    expect(failed.step === 'failed' && failed.error.code).toBe('store-changed');
    expect(failoverExitCode(failed)).toBe(6);
    const step = failover(failed, { type: 'back' });
    expect(step.state.step).toBe('reading');
    expect(step.effects).toEqual([{ type: 'read' }]);
  });

  it('lets q end the walk at every step except while the act is under way', () => {
    for (const state of everyState()) expect(canQuit(state)).toBe(state.step !== 'acting');
    expect(everyState().some((state) => state.step === 'acting')).toBe(true);
  });

  it('shows a read that failed as a failure, and r reads again', () => {
    const failed = walk(initialFailover.state, { type: 'read-failed', error: storeChanged });
    expect(failed.step).toBe('failed');
    expect(failover(failed, { type: 'refresh' }).effects).toEqual([{ type: 'read' }]);
  });
});
