import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { runFailoverEffect, type FailoverPorts } from '../../src/app/failover-run-effect.js';
import { FP_A, READS } from './status-fixtures.js';

const AT = new Date('2026-11-30T10:31:02Z');

/** Ports that throw on any call the test did not set up. */
function ports(overrides: Partial<FailoverPorts>): FailoverPorts {
  return {
    read: async () => {
      throw new Error('unexpected read');
    },
    act: async () => {
      throw new Error('unexpected act');
    },
    ...overrides,
  };
}

describe('the failover effect runner', () => {
  it('hands the act the verdict the operator confirmed and the gate instant', async () => {
    const calls: unknown[] = [];
    const event = await runFailoverEffect(
      { type: 'act', action: 'force', seen: READS.leftBehind().verdict, at: AT },
      ports({
        act: async (...args) => {
          calls.push(args);
          return { kind: 'forced', fingerprint: FP_A, supersededDir: '/x/ca.superseded-20261130T103102Z' };
        },
      }),
    );
    expect(calls).toEqual([['force', READS.leftBehind().verdict, AT]]);
    expect(event).toEqual({
      type: 'acted',
      outcome: { kind: 'forced', fingerprint: FP_A, supersededDir: '/x/ca.superseded-20261130T103102Z' },
    });
  });

  it('resolves to an event for every failure, keeping a BatonError as it is and wrapping anything else', async () => {
    const busy = new BatonError('lock-busy', { what: 'held', where: '/x/ca.lock' });
    const kept = await runFailoverEffect(
      { type: 'act', action: 'adopt', seen: READS.adopt().verdict, at: undefined },
      ports({
        act: async () => {
          throw busy;
        },
      }),
    );
    expect(kept).toEqual({ type: 'act-failed', error: busy });

    const wrapped = await runFailoverEffect(
      { type: 'act', action: 'publish', seen: READS.publish().verdict, at: undefined },
      ports({
        act: async () => {
          throw new TypeError('socket hang up');
        },
      }),
    );
    expect(wrapped.type).toBe('act-failed');
    expect(wrapped.type === 'act-failed' && wrapped.error.what).toContain('socket hang up');
    expect(wrapped.type === 'act-failed' && wrapped.error.next).toBeTruthy();

    expect((await runFailoverEffect({ type: 'read' }, ports({}))).type).toBe('read-failed');
    expect((await runFailoverEffect({ type: 'reread' }, ports({}))).type).toBe('reread-failed');
  });

  it('reads through the read port for both the first read and the re-read', async () => {
    const p = ports({ read: async () => READS.inSync() });
    expect(await runFailoverEffect({ type: 'read' }, p)).toEqual({ type: 'read', reading: READS.inSync() });
    expect(await runFailoverEffect({ type: 'reread' }, p)).toEqual({
      type: 'reread',
      reading: READS.inSync(),
    });
  });
});
