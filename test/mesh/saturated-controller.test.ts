/**
 * A saturated controller at `--concurrency 64` calls no healthy machine unreachable: the
 * outcome, not a duration. Two halves:
 * - the scheduling, on a fake clock and a model controller whose answers slow with every call
 *   in flight (processor sharing: 50 calls at once each take 50× one alone) and whose cores are
 *   full past 8 (PSI): started at the ceiling, every call would outlive its deadline together
 *   (issue 46: 49 of 49); the limiter starts at 8, holds while the cores are full, and every
 *   machine answers within its deadline;
 * - the read retry (src/transport/bound-transport.ts): a read that found the machine
 *   unreachable while the controller was saturated is asked once more; one that found it so on
 *   a controller with room to spare is not, and a write is never repeated.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdaptiveLimit, type ControllerPressure } from '../../src/mesh/adaptive-limit.js';
import { mapBounded } from '../../src/mesh/map-bounded.js';
import { TransportError } from '../../src/mesh/transport.js';
import { readWithinBounds, withinBounds } from '../../src/transport/bound-transport.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('a saturated controller at --concurrency 64 (a model on a fake clock)', () => {
  it('50 machines: none outlives its deadline, and never more than 8 in flight while the cores are full', async () => {
    vi.useFakeTimers();
    const ONE_ALONE_MS = 100;
    const DEADLINE_MS = 1_500;
    const CORES_FULL_PAST = 8;
    let inFlight = 0;
    let peak = 0;
    // PSI is an average over the last 10 s: the cores were full if they were within the last second here.
    let fullAt = Number.NEGATIVE_INFINITY;
    const pressure: ControllerPressure = {
      eventLoopDelayMs: () => 0,
      loadPerCore: () => 0,
      cpuPressure: () => (Date.now() - fullAt < 1_000 ? 100 : 10),
    };
    const limiter = new AdaptiveLimit(64, () => Date.now(), pressure);
    const machines = Array.from({ length: 50 }, (_, i) => `m${i}`);
    const outcome = new Map<string, 'answered' | 'unreachable'>();
    const all = mapBounded(machines, limiter, async (machine) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      if (inFlight >= CORES_FULL_PAST) fullAt = Date.now();
      // Processor sharing: each call in flight slows every other one alike.
      const takesMs = ONE_ALONE_MS * inFlight;
      await new Promise((r) => setTimeout(r, Math.min(takesMs, DEADLINE_MS)));
      inFlight -= 1;
      outcome.set(machine, takesMs <= DEADLINE_MS ? 'answered' : 'unreachable');
    });
    await vi.runAllTimersAsync();
    await all;
    expect([...outcome.values()].filter((o) => o === 'unreachable')).toEqual([]);
    expect(outcome.size).toBe(50);
    expect(peak).toBeLessThanOrEqual(CORES_FULL_PAST);
    // The same model started at the ceiling: 50 at once, each 50 × 100 ms — past the deadline, all of them.
    expect(ONE_ALONE_MS * 50).toBeGreaterThan(DEADLINE_MS);
  });
});

describe('a read that found the machine unreachable on a saturated controller', () => {
  const silent = () => new TransportError('web1', 'digests: no answer within 15 s', true);

  it('is asked once more, and the second answer is the answer', async () => {
    let calls = 0;
    const got = await readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
      calls += 1;
      if (calls === 1) throw silent();
      return 'digests';
    });
    expect(got).toBe('digests');
    expect(calls).toBe(2);
  });

  it('silent twice: unreachable, and the reason says it was asked twice and why', async () => {
    let calls = 0;
    const failed = readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
      calls += 1;
      throw silent();
    });
    await expect(failed).rejects.toMatchObject({
      unreachable: true,
      reason: 'digests: no answer within 15 s (asked twice: this controller was saturated during the first)',
    });
    expect(calls).toBe(2);
  });

  it('on a controller with room to spare: asked once, the machine is unreachable as it said', async () => {
    let calls = 0;
    const failed = readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => false }, async () => {
      calls += 1;
      throw silent();
    });
    await expect(failed).rejects.toMatchObject({ reason: 'digests: no answer within 15 s' });
    expect(calls).toBe(1);
  });

  it('a machine that answered with a failure or a refusal, or a cancelled command, is not asked again', async () => {
    let calls = 0;
    await expect(
      readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
        calls += 1;
        throw new TransportError('web1', 'digests failed on the machine: Permission denied');
      }),
    ).rejects.toThrow('Permission denied');
    expect(calls).toBe(1);
    await expect(
      readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
        calls += 1;
        throw new TransportError('web1', 'ssh failed: Could not resolve hostname web1.internal', true);
      }),
    ).rejects.toMatchObject({ reason: 'ssh failed: Could not resolve hostname web1.internal' });
    expect(calls).toBe(2);
    const cancel = new AbortController();
    cancel.abort();
    await expect(
      readWithinBounds(
        { timeoutMs: 15_000, signal: cancel.signal, controllerBusySince: () => true },
        async () => {
          calls += 1;
          throw silent();
        },
      ),
    ).rejects.toThrow('no answer');
    expect(calls).toBe(3);
  });

  it("ssh's own connection timeout on a saturated controller is silence too: asked again", async () => {
    let calls = 0;
    const got = await readWithinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
      calls += 1;
      if (calls === 1)
        throw new TransportError('web1', 'ssh failed: Connection timed out during banner exchange', true);
      return 'hello';
    });
    expect(got).toBe('hello');
    expect(calls).toBe(2);
  });

  it('a write (withinBounds) is never repeated here, saturated or not', async () => {
    let calls = 0;
    await expect(
      withinBounds({ timeoutMs: 15_000, controllerBusySince: () => true }, async () => {
        calls += 1;
        throw new TransportError('web1', 'stage: no answer within 15 s', true);
      }),
    ).rejects.toThrow('no answer');
    expect(calls).toBe(1);
  });
});
