/**
 * The bench's split of a window (test/bench/lib/window-parts.ts) from the lines
 * BATON_TRACE_WINDOWS writes: each part is the median over pairs, the receipts' spread is the
 * provisioner's, and "in flight" counts the renames sent and not yet done on their machines.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { windowParts, windowPartsWords } from '../bench/lib/window-parts.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const tmp = makeTempDir('window-parts');
afterAll(() => tmp.cleanup());

const traced = (name: string, lines: readonly (readonly [string, number, number, number, number])[]) => {
  const file = path.join(tmp.dir, name);
  writeFileSync(file, lines.map((l) => `${l.join(' ')}\n`).join(''));
  return file;
};

describe('windowParts', () => {
  it('splits each window into its three parts and counts the renames in flight at once', () => {
    // a and b: a burst (both sent before either is renamed); c: alone, later.
    const parts = windowParts(
      traced('burst', [
        ['p:a', 1000, 1010, 1011, 1030],
        ['p:b', 1002, 1010, 1012, 1040],
        ['p:c', 1100, 1120, 1125, 1130],
      ]),
    );
    expect(parts).toEqual({
      pairs: 3,
      toControllerMs: 10,
      turnMs: 2,
      toMachineMs: 19,
      maxTurnMs: 5,
      receiptsSpreadMs: 100,
      maxInFlight: 2,
    });
    expect(windowPartsWords(parts)).toBe(
      "medians: receipt → controller 10 ms, controller's turn 2 ms (max 5 ms), rename → machine 19 ms; receipts written over 100 ms; at most 2 renames in flight",
    );
  });

  it('a rename done before the next is sent leaves one in flight; a missing or empty trace says so', () => {
    const parts = windowParts(
      traced('serial', [
        ['p:a', 0, 1, 2, 3],
        ['p:b', 3, 4, 5, 6],
      ]),
    );
    expect(parts?.maxInFlight).toBe(1);
    expect(windowParts(path.join(tmp.dir, 'absent'))).toBeUndefined();
    expect(windowParts(traced('empty', []))).toBeUndefined();
    expect(windowPartsWords(undefined)).toBe('no window trace');
  });
});
