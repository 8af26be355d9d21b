import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { confirmations, confirmedOf, readJournalConfirmed } from '../../src/mesh/confirmed.js';
import { appendJournal, JOURNAL_FILE, type JournalRecord } from '../../src/mesh/journal.js';
import { journalHistory, readJournalHistory } from '../../src/mesh/journal-history.js';
import { confirmedJson, confirmedText } from '../../src/app/confirmed-text.js';
import { appSummaryLines } from '../../src/app/rotation-app-text.js';
import { appStatus } from '../../src/mesh/app-status.js';
import type { Terminal } from '../../src/app/rotation-flow.js';

const record = (over: Partial<JournalRecord>): JournalRecord => ({
  id: 'r1',
  at: '2026-12-01T10:00:00.000Z',
  operator: 'ops',
  phase: 'applied',
  selector: 'every pair',
  holders: [],
  results: [],
  pairs: [],
  mesh: 'm',
  ...over,
});

const reload = (pairs: string[], result: 'ok' | 'failed') => ({
  consumer: 'web1-app',
  machine: 'web1',
  pairs,
  result,
  durationMs: 5,
  stderr: [],
  at: '2026-12-01T10:00:01.000Z',
});

describe('which steps of a finished pair were confirmed', () => {
  it("the journal's marks come from the record's own test logins and reloads, per finished pair", () => {
    const marks = confirmedOf({
      applied: ['pg:web1', 'pg:web2'],
      test_logins: [{ pair: 'pg:web1', machine: 'web1', login: 'web1_app', ok: true, ms: 4 }],
      reloads: [reload(['pg:web2'], 'failed')],
    });
    expect(marks).toEqual({
      'pg:web1': { file: 'confirmed', test_login: 'confirmed', reload: 'not-run' },
      'pg:web2': { file: 'confirmed', test_login: 'not-run', reload: 'failed' },
    });
    expect(confirmedOf({ applied: [] })).toBeUndefined();
  });

  it('appendJournal writes them, and status reads them back; an older record without marks reads as not recorded', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-confirmed-'));
    try {
      // A record of an older baton: it finished pg:web1 but holds no marks.
      writeFileSync(
        path.join(dir, JOURNAL_FILE),
        `${JSON.stringify(record({ id: 'old', applied: ['pg:web1'], pairs: [{ key: 'pg:web1' } as never] }))}\n`,
      );
      let history = await readJournalHistory(dir, 'm');
      expect(history.confirmed('pg:web1')).toEqual({});
      const old = confirmations({
        journal: history.confirmed('pg:web1'),
        hasConnect: true,
        hasReload: true,
        filesAgreeNow: true,
        sessions: 'not-recorded',
      });
      expect(Object.values(confirmedJson(old))).not.toContain('confirmed');
      expect(confirmedJson(old)).toEqual({
        file: 'not-recorded',
        test_login: 'not-recorded',
        reload: 'not-recorded',
        app_sessions: 'not-recorded',
      });

      await appendJournal(
        dir,
        record({
          id: 'new',
          applied: ['pg:web1'],
          test_logins: [{ pair: 'pg:web1', machine: 'web1', login: 'web1_app', ok: true, ms: 4 }],
        }),
      );
      const lines = readFileSync(path.join(dir, JOURNAL_FILE), 'utf8').trim().split('\n');
      expect(JSON.parse(lines[1]!).confirmed).toEqual({
        'pg:web1': { file: 'confirmed', test_login: 'confirmed', reload: 'not-run' },
      });
      history = await readJournalHistory(dir, 'm');
      const now = confirmations({
        journal: history.confirmed('pg:web1'),
        hasConnect: true,
        hasReload: false,
        filesAgreeNow: true,
        sessions: 'not-confirmed',
      });
      expect(confirmedJson(now)).toEqual({
        file: 'confirmed',
        test_login: 'confirmed',
        reload: 'not-configured',
        app_sessions: 'not-confirmed',
      });
      expect(confirmedText(now)).toBe(
        "✓ file; ✓ test login; · reload none (no reload:); ! app's new sessions NOT seen since the move",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a step the inventory names that no record says ran is NOT confirmed; ends that disagree now take the file mark', () => {
    const journal = readJournalConfirmed({ file: 'confirmed', test_login: 'not-run', reload: 'not-run' });
    const c = confirmations({
      journal,
      hasConnect: true,
      hasReload: true,
      filesAgreeNow: false,
      sessions: 'failed',
    });
    expect(c).toEqual({
      file: 'not-confirmed',
      testLogin: 'not-confirmed',
      reload: 'not-confirmed',
      sessions: 'failed',
    });
    expect(confirmedText(c)).toContain(
      'test login NOT confirmed (connect: is set, but no test login was recorded)',
    );
    expect(confirmedText(c)).toContain("✗ app's new sessions FAILED");
  });

  it('a mark from disk that is not one of the words is not recorded, never confirmed', () => {
    expect(readJournalConfirmed({ file: 'yes', test_login: true, reload: 'confirmed' })).toEqual({
      reload: 'confirmed',
    });
    expect(readJournalConfirmed('confirmed')).toEqual({});
    // A record whose `confirmed` is not an object: every mark not recorded.
    const h = journalHistory([record({ applied: ['pg:web1'], confirmed: 'all' as never })]);
    expect(h.confirmed('pg:web1')).toEqual({});
  });

  it("the rotation's summary says the same marks for each pair it finished, the sessions left to mesh status", () => {
    const state = {
      step: 'done',
      id: 'r1',
      plan: { pairs: [], holders: [], selectorText: 'every pair' },
      applied: ['pg:web1'],
      app: {
        testLogins: [{ pair: 'pg:web1', machine: 'web1', login: 'web1_app', ok: true, ms: 4 }],
        reloads: [],
      },
    } as unknown as Terminal;
    expect(appSummaryLines(state).at(-1)).toBe(
      "  · pg:web1 confirmed: ✓ file; ✓ test login; ! reload none ran; · app's new sessions not checked by the rotation (mesh status looks for them)",
    );
  });

  it("the app's new sessions: a pool the reload rebuilt opened them before the journal's record was written, and they count; none since the move is NOT confirmed", () => {
    const moved = Date.parse('2026-12-01T10:00:05.000Z');
    const census = (starts: string[]) => ({
      format: 'baton.sessions/1' as const,
      login: 'web1_app',
      open: starts.length,
      newest_start: starts[0] ?? null,
      recent_starts: starts,
      clients: [],
      since: '2026-12-01T09:00:00.000Z',
      at: '2026-12-01T10:00:06.000Z',
    });
    const base = {
      consumer: 'web1-app',
      live: 'web1_app',
      movedAtMs: moved,
      leftCensus: undefined,
      lastReload: { ...reload(['pg:web1'], 'ok'), at: '2026-12-01T10:00:04.500Z', durationMs: 500 },
    };
    // Opened at 10:00:04.2, during the reload (10:00:04.0–04.5), before the record's 10:00:05.
    expect(appStatus({ ...base, liveCensus: census(['2026-12-01T10:00:04.200Z']) }).newSessions).toBe(
      'confirmed',
    );
    // Before the reload began: an old session, not the app's own new one.
    expect(appStatus({ ...base, liveCensus: census(['2026-12-01T10:00:03.000Z']) }).newSessions).toBe(
      'not-confirmed',
    );
    expect(appStatus({ ...base, lastReload: undefined, liveCensus: census([]) }).newSessions).toBe(
      'not-confirmed',
    );
    expect(appStatus({ ...base, movedAtMs: undefined, liveCensus: census([]) }).newSessions).toBe(
      'not-recorded',
    );
  });
});
