/**
 * A roll-back's headline says what its counts say: a rotation whose every pair turned out
 * finished (its receipt had come) is "finished", never "rolled back" over "1 finished, 0 rolled
 * back"; some pairs taken back is "rolled back"; a pair left for a person is "did not finish".
 */
import { describe, expect, it } from 'vitest';
import { rolledBackLines } from '../../src/app/rotation-text.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from '../mesh/mesh-fixture.js';

const plan = planRotation(meshInventory(1, 'local'), { by: 'provider', name: 'pg-main' });
const [a, b] = plan.pairs.map((p) => p.key);
const headline = (results: Parameters<typeof rolledBackLines>[0]['results'], applied: string[] = []) =>
  rolledBackLines({
    id: 'r1',
    plan: { pairs: plan.pairs, selectorText: plan.selectorText },
    applied,
    windows: {},
    failures: [],
    stopped: 'interrupted by SIGINT',
    results,
  })[0];

describe("a roll-back's headline", () => {
  it('every pair finished: "finished"', () => {
    expect(plan.pairs).toHaveLength(2);
    expect(headline([{ pair: b!, result: 'finished' }], [a!])).toBe(
      'Rotation r1 finished (interrupted by SIGINT): 2 of 2 credentials finished, 0 rolled back.',
    );
  });

  it('some taken back: "rolled back"; one left for a person: "did not finish"', () => {
    expect(headline([{ pair: b!, result: 'rolled-back', receipt: 'old' }], [a!])).toBe(
      'Rotation r1 rolled back (interrupted by SIGINT): 1 of 2 credentials finished, 1 rolled back.',
    );
    expect(headline([{ pair: b!, result: 'consumer-unknown', reason: 'no route' }], [a!])).toBe(
      'Rotation r1 did not finish (interrupted by SIGINT): 1 of 2 credentials finished, 0 rolled back, 1 left.',
    );
  });
});
