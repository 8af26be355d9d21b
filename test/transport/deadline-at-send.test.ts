/**
 * A call's deadline starts when it is sent (src/mesh/deadline.ts, bound-transport.ts): time a
 * call spent queued on the controller is not the machine's. "no answer within N s" is said only
 * of a machine actually waited on N s; a call never sent within the bound is "not reached: the
 * controller was busy" and not marked unreachable. Real timers, bounds of a few hundred ms.
 */
import { describe, expect, it } from 'vitest';
import { sent } from '../../src/mesh/deadline.js';
import { abortedError, TransportError, type Transport } from '../../src/mesh/transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';

const TIMEOUT = 300;

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
  it('queued 200 ms, then answered in 200 ms: 400 ms in all, past the 300 ms bound, and it succeeds', async () => {
    const result = await outcome(transport(200, 200));
    expect(result.error).toBeUndefined();
    expect(result.ms).toBeGreaterThanOrEqual(390);
  });

  it('never sent within the bound: "not reached: the controller was busy", not unreachable', async () => {
    const result = await outcome(transport(5_000, 0));
    expect(result.error?.reason).toBe(
      'resolve: not reached: the controller was busy (the call waited 0.3 s for a free connection and was never sent)',
    );
    expect(result.error?.unreachable).toBe(false);
    expect(result.ms).toBeLessThan(1_000);
  });

  it('sent and silent: "no answer within 0.3 s", said only after 0.3 s of waiting on the machine', async () => {
    const t = transport(150, 5_000);
    const started = Date.now();
    const result = await outcome(t);
    expect(result.error?.reason).toBe('resolve: no answer within 0.3 s');
    expect(result.error?.unreachable).toBe(true);
    expect(Date.now() - t.sentAt!).toBeGreaterThanOrEqual(TIMEOUT - 5);
    expect(t.sentAt! - started).toBeGreaterThanOrEqual(140);
  });

  it('a transport that does not report sending is bounded from the call, as before', async () => {
    const result = await outcome(transport(200, 200, false));
    expect(result.error?.reason).toBe('resolve: no answer within 0.3 s');
  });
});
