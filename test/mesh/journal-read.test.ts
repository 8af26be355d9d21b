/**
 * The journal as read back is untrusted text: a line is one of ours only in our shape, and a
 * rotation id is only what newRotationId makes (ROTATION_ID) — ids are shown and put into the
 * commands status suggests (`mesh resume <id>`), so an edited line with a steering id is skipped.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournalHistory } from '../../src/mesh/journal-history.js';
import { JOURNAL_FILE, newRotationId, parseJournalLine, type JournalRecord } from '../../src/mesh/journal.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const record = (id: string, at: string): JournalRecord => ({
  id,
  at,
  operator: 'o',
  phase: 'applied',
  selector: '--pair pg-main:web1-app',
  holders: [],
  results: [],
  pairs: [
    {
      key: 'pg-main:web1-app',
      provider: 'pg-main',
      consumer: 'web1-app',
      role: 'web1_app',
      provider_machine: 'db1',
      consumer_machine: 'web1',
      provider_path: 'p',
      consumer_path: 'c',
      receipt_path: 'r',
    },
  ],
  applied: ['pg-main:web1-app'],
  mesh: 'mesh-1',
});

let tmp: { dir: string; cleanup: () => void } | undefined;
afterEach(() => tmp?.cleanup());

describe('reading the journal back', () => {
  it('takes an id newRotationId makes, and skips a line whose id steers the terminal or a shell', async () => {
    const ours = newRotationId(new Date('2026-12-04T20:00:00Z'), 'a1b2c3');
    expect(parseJournalLine(JSON.stringify(record(ours, '2026-12-04T20:00:00Z')))?.id).toBe(ours);
    for (const id of ['\u001b[2Jrot', 'rot; rm -rf /', 'rot\nNext: x', '', 'r'.repeat(65)])
      expect(parseJournalLine(JSON.stringify(record(id, '2026-12-04T20:01:00Z'))), JSON.stringify(id)).toBe(
        undefined,
      );
    tmp = makeTempDir('baton-journal-read-');
    writeFileSync(
      path.join(tmp.dir, JOURNAL_FILE),
      [record(ours, '2026-12-04T20:00:00Z'), record('\u001b]0;owned\u0007', '2026-12-04T20:05:00Z')]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    // The later, hostile line is not the pair's last rotation: the one baton wrote is.
    const history = await readJournalHistory(tmp.dir, 'mesh-1');
    expect(history.pair('pg-main:web1-app').lastRotation).toEqual({
      id: ours,
      outcome: 'applied',
      at: '2026-12-04T20:00:00Z',
    });
  });
});
