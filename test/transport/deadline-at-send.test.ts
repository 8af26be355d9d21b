/**
 * A call's deadline starts when it is sent (src/mesh/deadline.ts, bound-transport.ts): time a
 * call spent queued on the controller is not the machine's. "no answer within N s" is said only
 * of a machine actually waited on N s; a call never sent within the bound is "not reached: the
 * controller was busy" and not marked unreachable. Real timers with a 1 s bound: every figure keeps
 * 450 ms or more from it, so a worker whose timers fire late under load still lands on the same side.
 */
import { describe, expect, it } from 'vitest';
import { sent } from '../../src/mesh/deadline.js';
import { abortedError, TransportError, type Transport } from '../../src/mesh/transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';

const TIMEOUT = 1_000;

/** A transport whose resolve waits `queuedMs` before it is sent, then `answerMs` for the machine. */
function transport(queuedMs: number, answerMs: number, reportsSent = true): Transport & { sentAt?: number } {
  const t: Transport & { sentAt?: number } = {
    machine: 'web5',
    reportsSent,
    resolve: (signal) =>
      new Promise<void>((resolve, reject) => {
        const fail = () => reject(abortedError('web5', 'resolve', signal));
        if (signal.aborted) return fail();
        signal.addEventListener('abort', fail, { once: true });
        setTimeout(() => {
          if (signal.aborted) return;
          sent(signal);
          t.sentAt = Date.now();
          setTimeout(resolve, answerMs);
        }, queuedMs);
      }),
  } as Transport & { sentAt?: number };
  return t;
}

async function outcome(t: Transport): Promise<{ error?: TransportError; ms: number }> {
  const started = Date.now();
  try {
    // A controller with room to spare: a silent read is not asked twice (saturated-controller.test.ts).
    await bindTransport(t, { timeoutMs: TIMEOUT, controllerBusySince: () => false }).resolve();
    return { ms: Date.now() - started };
  } catch (error) {
    if (!(error instanceof TransportError)) throw error;
    return { error, ms: Date.now() - started };
  }
}

describe('the deadline starts at send', () => {
  it('queued 500 ms, then answered in 550 ms: 1.05 s in all, past the 1 s bound, and it succeeds', async () => {
    const result = await outcome(transport(500, 550));
    expect(result.error).toBeUndefined();
    expect(result.ms).toBeGreaterThanOrEqual(1_040);
  });

  it('never sent within the bound: "not reached: the controller was busy", not unreachable', async () => {
    const result = await outcome(transport(30_000, 0));
    expect(result.error?.reason).toBe(
      'resolve: not reached: the controller was busy (the call waited 1 s for a free connection and was never sent)',
    );
    expect(result.error?.unreachable).toBe(false);
    // Not the 30 s the call would have queued.
    expect(result.ms).toBeLessThan(15_000);
  });

  it('sent and silent: "no answer within 1 s", said only after 1 s of waiting on the machine', async () => {
    const t = transport(400, 30_000);
    const started = Date.now();
    const result = await outcome(t);
    expect(result.error?.reason).toBe('resolve: no answer within 1 s');
    expect(result.error?.unreachable).toBe(true);
    expect(Date.now() - t.sentAt!).toBeGreaterThanOrEqual(TIMEOUT - 5);
    expect(t.sentAt! - started).toBeGreaterThanOrEqual(390);
  });

  it('a transport that does not report sending is bounded from the call, as before', async () => {
    const result = await outcome(transport(700, 700, false));
    expect(result.error?.reason).toBe('resolve: no answer within 1 s');
  });
});
