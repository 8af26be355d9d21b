import { describe, expect, it } from 'vitest';
import { ProvisionerGate } from '../../src/sandbox/provisioner-gate.js';

/** A cycle the test finishes by hand, recording when it started. */
function manualCycle(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    run: async () => {
      log.push(`${name} started`);
      await done;
      log.push(`${name} ended`);
    },
    finish: () => finish(),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ProvisionerGate (the drill holds its provisioner for the pending reading)', () => {
  it('a hold waits for the running cycle, then no cycle starts until it is released', async () => {
    const gate = new ProvisionerGate();
    const signal = new AbortController().signal;
    const log: string[] = [];
    const first = manualCycle(log, 'first');
    const running = gate.cycle(first.run, signal);
    let held = false;
    const holding = gate.hold().then((release) => {
      held = true;
      return release;
    });
    await tick();
    expect(held).toBe(false);
    first.finish();
    await running;
    const release = await holding;
    expect(held).toBe(true);

    const second = manualCycle(log, 'second');
    const waiting = gate.cycle(second.run, signal);
    await tick();
    expect(log).toEqual(['first started', 'first ended']);
    release();
    release(); // twice is harmless: the count must not go below zero
    await tick();
    expect(log).toEqual(['first started', 'first ended', 'second started']);
    second.finish();
    await waiting;
    // Released, the gate no longer holds anything.
    const third = manualCycle(log, 'third');
    const after = gate.cycle(third.run, signal);
    await tick();
    expect(log.at(-1)).toBe('third started');
    third.finish();
    await after;
  });

  it('an aborted signal ends the wait of a held cycle, so teardown never hangs on a forgotten hold', async () => {
    const gate = new ProvisionerGate();
    const abort = new AbortController();
    await gate.hold();
    const log: string[] = [];
    const cycle = manualCycle(log, 'cycle');
    const waiting = gate.cycle(cycle.run, abort.signal);
    await tick();
    expect(log).toEqual([]);
    abort.abort();
    await tick();
    expect(log).toEqual(['cycle started']);
    cycle.finish();
    await waiting;
  });
});
