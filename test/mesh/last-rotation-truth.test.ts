/**
 * A pair's last rotation as status reads it, the machines' word first (intent.ts
 * withMachineTruth): baton killed between a pair's `finished` intent and the record after it
 * (a rotation's or a resume's finish-apply writes the intents first) leaves the journal's last
 * word on that rotation open (`prepared`, `committed`) and the pair's age at the rotation
 * before. Status must say the rotation finished the pair, and when, from the intent; any other
 * intent leaves the journal's word as it is.
 */
import { describe, expect, it } from 'vitest';
import { journalHistory } from '../../src/mesh/journal-history.js';
import type { JournalRecord } from '../../src/mesh/journal.js';
import { withMachineTruth, type PairOnMachines, type ProviderIntent } from '../../src/mesh/intent.js';

const KEY = 'pg-main:web1-app';

function record(id: string, phase: JournalRecord['phase'], at: string, applied = false): JournalRecord {
  return {
    id,
    at,
    operator: 't',
    phase,
    selector: '',
    holders: [],
    results: [],
    pairs: [
      {
        key: KEY,
        provider: 'pg-main',
        consumer: 'web1-app',
        role: 'web1_app',
        provider_machine: 'db1',
        consumer_machine: 'web1',
        provider_path: '/p',
        consumer_path: '/c',
        receipt_path: '/r',
      },
    ],
    ...(applied ? { applied: [KEY] } : {}),
  };
}

/** r0 finished the pair on 1 December; r1 prepared it on 4 December and the journal says no more. */
const RECORDS = [
  record('r0', 'prepared', '2026-12-01T00:00:00Z'),
  record('r0', 'finished', '2026-12-01T00:00:01Z', true),
  record('r1', 'prepared', '2026-12-04T10:00:00Z'),
];

const on = (rotation: string, phase: ProviderIntent['phase']): PairOnMachines => ({
  intent: {
    v: 1,
    end: 'provides',
    rotation,
    pair: KEY,
    phase,
    at: '2026-12-04T10:00:05Z',
    by: { host: 'h', pid: 1 },
  },
  consumer: undefined,
  lockedBy: undefined,
});

describe("a pair's last rotation, the machines' word first", () => {
  it('the journal stopped at prepared, the intent of that rotation says finished: finished, rotated when the intent was written', () => {
    const pair = withMachineTruth(journalHistory(RECORDS), () => on('r1', 'finished')).pair(KEY);
    expect(pair).toEqual({
      lastRotatedAt: '2026-12-04T10:00:05Z',
      lastRotation: { id: 'r1', outcome: 'finished', at: '2026-12-04T10:00:00Z' },
    });
  });

  it("any other intent (still open, another rotation's, none) or a journal that closed the rotation: the journal's word", () => {
    const journal = journalHistory(RECORDS).pair(KEY);
    expect(journal.lastRotation?.outcome).toBe('prepared');
    for (const machines of [on('r1', 'committing'), on('r1', 'rolled-back'), on('r2', 'finished'), undefined])
      expect(withMachineTruth(journalHistory(RECORDS), () => machines).pair(KEY)).toEqual(journal);
    const closed = [...RECORDS, record('r1', 'resumed', '2026-12-04T10:00:09Z', true)];
    expect(withMachineTruth(journalHistory(closed), () => on('r1', 'finished')).pair(KEY)).toEqual(
      journalHistory(closed).pair(KEY),
    );
  });
});
