/**
 * The limiter behind every fan-out (src/mesh/adaptive-limit.ts, map-bounded.ts), on a fake
 * clock and a fake controller: it starts at --concurrency or 8, whichever is lower, doubles per
 * window of timely answers up to --concurrency and never passes it, halves once per round trip
 * when answers slow down or the event loop lags, then grows back by one per window of timely
 * answers, and never goes under one. A saturated host (CPU pressure, or the load average where
 * there is no PSI) holds it at its start: it grows no further and, by itself, cuts nothing.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveLimit, type ControllerPressure } from '../../src/mesh/adaptive-limit.js';
import { mapBounded } from '../../src/mesh/map-bounded.js';

function fakeController() {
  let now = 0;
  const state: { lagMs: number; loadPerCore: number; psi: number | undefined } = {
    lagMs: 0,
    loadPerCore: 0,
    psi: 0,
  };
  const pressure: ControllerPressure = {
    eventLoopDelayMs: () => state.lagMs,
    loadPerCore: () => state.loadPerCore,
    cpuPressure: () => state.psi,
  };
  return {
    state,
    clock: () => now,
    advance: (ms: number) => (now += ms),
    limiter: (ceiling: number) => new AdaptiveLimit(ceiling, () => now, pressure),
  };
}

/** `n` calls started together that each take `ms`. */
function round(c: ReturnType<typeof fakeController>, limiter: AdaptiveLimit, n: number, ms: number): void {
  const samples = Array.from({ length: n }, () => limiter.start());
  c.advance(ms);
  for (const s of samples) limiter.done(s);
}

describe('the adaptive limit', () => {
  it('starts at the flag and, answers steady, never passes it', () => {
    const c = fakeController();
    const limiter = c.limiter(8);
    expect(limiter.limit).toBe(8);
    for (let i = 0; i < 20; i++) round(c, limiter, 8, 200);
    expect(limiter.limit).toBe(8);
    expect(limiter.cuts).toBe(0);
  });

  it('a higher ceiling: starts at 8 and doubles per window of timely answers, up to the ceiling', () => {
    const c = fakeController();
    const limiter = c.limiter(64);
    expect(limiter.limit).toBe(8);
    const seen = [limiter.limit];
    for (let i = 0; i < 6; i++) {
      round(c, limiter, limiter.limit, 300);
      seen.push(limiter.limit);
    }
    expect(seen).toEqual([8, 16, 32, 64, 64, 64, 64]);
    expect(limiter.peak).toBe(64);
    expect(c.limiter(3).limit).toBe(3);
  });

  it('a saturated host holds the window: no growth while CPU pressure is high, growth again after', () => {
    const c = fakeController();
    const limiter = c.limiter(64);
    c.state.psi = 95;
    for (let i = 0; i < 10; i++) round(c, limiter, limiter.limit, 300);
    expect(limiter.limit).toBe(8);
    expect(limiter.cuts).toBe(0);
    c.state.psi = 5;
    round(c, limiter, limiter.limit, 300);
    expect(limiter.limit).toBe(16);
  });

  it('halved on a saturated host: grows back by one per window up to its start of 8, not past it', () => {
    const c = fakeController();
    const limiter = c.limiter(64);
    c.state.psi = 95;
    round(c, limiter, 8, 300);
    round(c, limiter, 8, 8_000);
    round(c, limiter, 4, 8_000);
    expect(limiter.limit).toBe(2);
    const seen: number[] = [];
    for (let i = 0; i < 12; i++) {
      round(c, limiter, limiter.limit, 300);
      seen.push(limiter.limit);
    }
    expect(seen.slice(0, 6)).toEqual([3, 4, 5, 6, 7, 8]);
    expect(Math.max(...seen)).toBe(8);
  });

  it('without PSI, the load average per core stands in for the host: it holds, never cuts', () => {
    const c = fakeController();
    const limiter = c.limiter(64);
    c.state.psi = undefined;
    c.state.loadPerCore = 4;
    for (let i = 0; i < 5; i++) round(c, limiter, limiter.limit, 300);
    expect(limiter.limit).toBe(8);
    c.state.loadPerCore = 0.5;
    round(c, limiter, limiter.limit, 300);
    expect(limiter.limit).toBe(16);
  });

  it('answers several times slower and seconds later: halves once per round trip, down to one at most', () => {
    const c = fakeController();
    const limiter = c.limiter(64);
    for (let i = 0; i < 3; i++) round(c, limiter, limiter.limit, 300);
    expect(limiter.limit).toBe(64);
    // 64 calls come back 10 s late together: ONE halving, not 64.
    round(c, limiter, 64, 10_000);
    expect(limiter.limit).toBe(32);
    round(c, limiter, 32, 10_000);
    expect(limiter.limit).toBe(16);
    for (let i = 0; i < 10; i++) round(c, limiter, limiter.limit, 10_000);
    expect(limiter.limit).toBe(1);
    expect(limiter.cuts).toBe(6);
  });

  it('a slow answer within the margin (a slow disk: 3× but under 2 s more) is not saturation', () => {
    const c = fakeController();
    const limiter = c.limiter(8);
    round(c, limiter, 8, 100);
    round(c, limiter, 8, 1_500);
    expect(limiter.limit).toBe(8);
  });

  it('after a halving, grows back by one per window of timely answers, up to the ceiling', () => {
    const c = fakeController();
    const limiter = c.limiter(16);
    round(c, limiter, 8, 200);
    expect(limiter.limit).toBe(16);
    round(c, limiter, 16, 8_000);
    expect(limiter.limit).toBe(8);
    round(c, limiter, 8, 200);
    expect(limiter.limit).toBe(9);
    round(c, limiter, 9, 200);
    expect(limiter.limit).toBe(10);
    for (let i = 0; i < 50; i++) round(c, limiter, limiter.limit, 200);
    expect(limiter.limit).toBe(16);
  });

  it('an event loop that lags cuts it even while answers look fast', () => {
    const c = fakeController();
    const limiter = c.limiter(32);
    round(c, limiter, 8, 200);
    round(c, limiter, 16, 200);
    expect(limiter.limit).toBe(32);
    c.state.lagMs = 500;
    round(c, limiter, 32, 200);
    expect(limiter.limit).toBe(16);
  });

  it('where PSI is there, the load average alone neither cuts nor holds it (PSI says it better)', () => {
    const c = fakeController();
    const limiter = c.limiter(16);
    c.state.loadPerCore = 10;
    for (let i = 0; i < 5; i++) round(c, limiter, limiter.limit, 200);
    expect(limiter.limit).toBe(16);
    expect(limiter.cuts).toBe(0);
  });
});

describe('mapBounded under the limit', () => {
  it('never more in flight than the limit; fewer after answers slowed; every item done once, in order of start', async () => {
    const c = fakeController();
    const limiter = c.limiter(8);
    let inFlight = 0;
    const peaks: number[] = [];
    const started: number[] = [];
    const items = Array.from({ length: 40 }, (_, i) => i);
    const results = await mapBounded(items, limiter, async (item) => {
      started.push(item);
      inFlight += 1;
      peaks.push(inFlight);
      await Promise.resolve();
      // The first 8 come back fast; from item 8 on each takes 10 s on the fake clock.
      c.advance(item < 8 ? 10 : 10_000);
      inFlight -= 1;
      return item * 2;
    });
    expect(results).toEqual(items.map((i) => i * 2));
    expect(started).toEqual(items);
    expect(Math.max(...peaks)).toBeLessThanOrEqual(8);
    expect(limiter.limit).toBeLessThan(8);
    expect(limiter.cuts).toBeGreaterThan(0);
  });

  it('a number is a fresh limiter at that ceiling; at most that many at once', async () => {
    let inFlight = 0;
    let peak = 0;
    await mapBounded(
      Array.from({ length: 30 }, (_, i) => i),
      5,
      async () => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight -= 1;
      },
    );
    expect(peak).toBe(5);
  });

  it('the first failure rejects and nothing new is started', async () => {
    const started: number[] = [];
    await expect(
      mapBounded([0, 1, 2, 3, 4, 5], 2, async (i) => {
        started.push(i);
        await Promise.resolve();
        if (i === 1) throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(started).toEqual([0, 1, 2]);
  });
});
