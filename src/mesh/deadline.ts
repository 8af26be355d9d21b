/**
 * A call's deadline starts when the call is SENT — its ssh process spawned — not when it was
 * queued. A call waiting for a place on a shared connection (MaxSessions) or behind a busy
 * controller has not asked the machine anything yet: timing it from the queue made 64 healthy
 * machines "unreachable: no answer within 120 s" on a saturated controller. So the bound has
 * two phases (src/transport/bound-transport.ts): until the transport says `sent(signal)`, the
 * time is the controller's and running out is "not reached: the controller was busy"; from
 * then on, the machine's, and running out is "no answer within N s" — said only of a machine
 * actually waited on that long.
 */

const armers = new WeakMap<AbortSignal, () => void>();

/** The transport has sent the call bound by `signal`: the machine's time starts now. */
export function sent(signal: AbortSignal): void {
  armers.get(signal)?.();
}

/** Called once, at `sent(signal)` (bound-transport.ts). */
export function onSent(signal: AbortSignal, arm: () => void): void {
  armers.set(signal, () => {
    armers.delete(signal);
    arm();
  });
}

/** The reason a call never sent within its bound carries: the controller, not the machine. */
export class NotReached extends Error {
  constructor(readonly timeoutMs: number) {
    super(
      `not reached: the controller was busy (the call waited ${formatSeconds(timeoutMs)} for a free connection and was never sent)`,
    );
    this.name = 'NotReached';
  }
}

export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}
