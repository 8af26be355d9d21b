/**
 * The line standing for the pairs a preview does not list counts each pair once: the pairs to
 * revoke are alternating ones, so they are counted among those with no window, not beside them
 * (it read "2 more pairs (1 with a window, 1 with none (alternating), 1 to revoke)").
 */
import { describe, expect, it } from 'vitest';
import { foldedPairsLine } from '../../src/app/rotation-preview.js';
import type { PlannedPair } from '../../src/mesh/rotation-plan.js';

const single = { key: 'db:web1-app', credential: 'single' } as unknown as PlannedPair;
const alternating = (left?: string) =>
  ({
    key: 'db:web2-app',
    credential: 'alternating',
    login: { slot: 'b', role: 'web2_app_b', ...(left ? { left: { slot: 'a', role: left } } : {}) },
  }) as unknown as PlannedPair;

/** The counts in the line's parenthesis, each once. */
function counts(line: string): number[] {
  const inner = /\((.*)\), each listed/.exec(line)![1]!;
  return inner
    .split(', ')
    .map((kind) => Number(/^(\d+) with/.exec(kind)?.[1] ?? NaN))
    .filter((n) => !Number.isNaN(n));
}

describe('foldedPairsLine', () => {
  it('counts the pairs to revoke among the alternating ones, so the kinds add up', () => {
    const rest = [single, alternating('web2_app_a')];
    const line = foldedPairsLine(rest, { endSessions: false }, '`baton mesh plan`');
    expect(line).toBe(
      '…and 2 more pairs (1 with a window, 1 with none (alternating): 1 of them to revoke), each listed by `baton mesh plan`',
    );
    expect(counts(line).reduce((a, b) => a + b, 0)).toBe(rest.length);
  });

  it('says nothing of revoking without a revoke, or when no pair has a login to leave', () => {
    expect(foldedPairsLine([single, alternating('web2_app_a')], undefined, 'X')).toBe(
      '…and 2 more pairs (1 with a window, 1 with none (alternating)), each listed by X',
    );
    expect(foldedPairsLine([alternating(), alternating()], { endSessions: true }, 'X')).toBe(
      '…and 2 more pairs (2 with none (alternating)), each listed by X',
    );
  });
});
