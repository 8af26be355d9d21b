import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { readStatus, statusExitCode, type StatusSources } from '../../src/app/status-report.js';
import { statusFlow, statusStateExitCode, initialStatus } from '../../src/app/status-flow.js';
import { runStatusEffect } from '../../src/app/status-run-effect.js';
import { statusErrorJson, statusJson } from '../../src/app/status-json.js';
import { statusText } from '../../src/app/status-text.js';
import { caretLine, fingerprintDiff, localRows, publishedRows } from '../../src/app/status-rows.js';
import { describeVerdict } from '../../src/app/status-verdict.js';
import { authorityText } from '../../src/commands/ca.js';
import { FP_A, FP_B, FP_OLD, READS, STATE_DIR, STORE_URL, local, published } from './status-fixtures.js';

const GLYPHS = { ok: '✓', action: '!', refused: '✗' };

function sources(overrides: Partial<StatusSources>): StatusSources {
  return {
    deployment: 'd1',
    stateDir: STATE_DIR,
    storeUrl: STORE_URL,
    readLocal: async () => local.whole(FP_A),
    readPublished: async () => published.present(FP_A),
    readStoreCheck: async () => undefined,
    now: () => new Date('2026-11-30T10:00:00Z'),
    ...overrides,
  };
}

describe('reading the status', () => {
  it('exits 0 in sync, 3 when action is needed and 1 when a side could not be read', () => {
    expect(statusExitCode(READS.inSync())).toBe(0);
    for (const r of [
      READS.adopt(),
      READS.publish(),
      READS.firstController(),
      READS.leftBehind(),
      READS.blockedHalf(),
    ]) {
      expect(statusExitCode(r), r.verdict.kind).toBe(3);
    }
    expect(statusExitCode(READS.unreachable())).toBe(1);
  });

  it('shows a local read that throws as "could not read", never as a fresh host', async () => {
    const r = await readStatus(
      sources({
        readLocal: async () => {
          throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        },
      }),
    );
    expect(r.local.state).toBe('blocked');
    expect(r.local.state === 'blocked' && r.local.problem).toBe('unreadable');
    expect(r.verdict.kind).toBe('blocked');
    expect(statusExitCode(r)).toBe(1);
  });

  it('keeps the local side when the store throws, and names the store', async () => {
    const r = await readStatus(
      sources({
        readPublished: async () => {
          throw new BatonError('failed', { what: 'connect ECONNREFUSED', where: 's3://b/p/authority.json' });
        },
      }),
    );
    expect(r.local.state).toBe('whole');
    expect(r.published.state).toBe('unreadable');
    expect(statusExitCode(r)).toBe(1);
  });

  it('re-reads on refresh but never starts a second read while one is in flight', async () => {
    const shown = statusFlow(initialStatus.state, { type: 'read', report: READS.inSync() });
    expect(shown.state.step).toBe('showing');
    const refreshing = statusFlow(shown.state, { type: 'refresh' });
    expect(refreshing.effects).toEqual([{ type: 'read' }]);
    expect(statusFlow(refreshing.state, { type: 'refresh' }).effects).toEqual([]);
    expect(statusFlow(initialStatus.state, { type: 'refresh' }).effects).toEqual([]);
  });

  it("ends the screen with the last read's code, and 1 when no read was shown", () => {
    expect(statusStateExitCode(initialStatus.state)).toBe(1);
    expect(
      statusStateExitCode(statusFlow(initialStatus.state, { type: 'read', report: READS.inSync() }).state),
    ).toBe(0);
    expect(
      statusStateExitCode(
        statusFlow(initialStatus.state, { type: 'read', report: READS.leftBehind() }).state,
      ),
    ).toBe(3);
    expect(
      statusStateExitCode(
        statusFlow(initialStatus.state, {
          type: 'read-failed',
          error: new BatonError('failed', { what: 'boom' }),
        }).state,
      ),
    ).toBe(1);
  });

  it('runs the read effect to an event even when the read rejects', async () => {
    const event = await runStatusEffect({ type: 'read' }, async () => {
      throw new Error('boom');
    });
    expect(event.type).toBe('read-failed');
    expect(event.type === 'read-failed' && event.error.what).toContain('boom');
  });
});

describe('the status rows', () => {
  it('marks exactly the characters where the two fingerprints differ', () => {
    const differs = fingerprintDiff(FP_A, FP_B);
    expect(differs.map((i) => [FP_A[i], FP_B[i]])).toEqual([
      ['A', 'Z'],
      ['7', '8'],
      ['3', '9'],
      ['4', '9'],
    ]);
    const carets = caretLine(differs);
    expect([...carets].flatMap((c, i) => (c === '^' ? [i] : []))).toEqual(differs);
    expect(caretLine(fingerprintDiff(FP_A, FP_A))).toBe('');
  });

  it('shows both fingerprints in full, the overlap and the store check', () => {
    const r = READS.ahead();
    const l = localRows(r);
    const p = publishedRows(r);
    expect(l.rows).toContainEqual({
      kind: 'fingerprint',
      label: 'fingerprint',
      value: { text: FP_A, differs: fingerprintDiff(FP_A, FP_OLD) },
    });
    expect(l.rows).toContainEqual({
      kind: 'fingerprint',
      label: 'previous',
      value: { text: FP_OLD, differs: [] },
    });
    // NotBefore (09:00) is backdated an hour: the overlap gives the one time JSON gives
    // (overlap_since, the NotBefore), says which it is, and when the rotation was.
    expect(l.rows.find((row) => row.label === 'overlap')).toMatchObject({
      value: 'since 2026-11-30 09:00 UTC (the NotBefore, backdated 1 h: rotated about 10:00 UTC)',
    });
    // …the same instant as --json's overlap_since, for the same read.
    expect(statusJson(r).local.overlap_since).toBe('2026-11-30T09:00:00.000Z');
    expect(p.rows.find((row) => row.label === 'cond. writes')).toMatchObject({
      value: 'not checked: run baton store check',
    });
    const synced = publishedRows(READS.inSync());
    expect(synced.rows.find((row) => row.label === 'cond. writes')).toMatchObject({
      value: expect.stringMatching(/^enforced/),
    });
    expect(publishedRows(READS.sealed()).rows.find((row) => row.label === 'sealed')).toMatchObject({
      value: expect.stringMatching(/^yes/),
    });
  });
});

describe('the nearby rows', () => {
  it("show a neighbour's location and deployment field escaped, on one line, and still name THIS deployment", () => {
    const base = READS.firstController();
    const hostile = `${base.deployment}\x1b[8m`;
    const r = {
      ...base,
      published: {
        state: 'none' as const,
        location: base.published.state === 'none' ? base.published.location : '',
        neighbours: [
          { location: '/srv/wier/authority.json\r\nNext: baton sync --force', deployment: hostile },
          { location: '/srv/wire\u202e/authority.json', deployment: base.deployment },
          { location: '/srv/other/authority.json', deployment: undefined },
        ],
      },
    };
    const nearby = publishedRows(r).rows.filter((row) => row.label === 'nearby');
    expect(nearby.map((row) => row.value)).toEqual([
      `/srv/wier/authority.json\\r\\nNext: baton sync --force (deployment ${base.deployment}\\x1b[8m)`,
      `/srv/wire\\u202e/authority.json (deployment ${base.deployment}, THIS deployment: is --store mistyped?)`,
      '/srv/other/authority.json (deployment unreadable)',
    ]);
  });
});

describe('file names found in ca/', () => {
  it('are listed escaped: a name with a line break or ESC never draws a line of its own', () => {
    const base = READS.inSync();
    const r = {
      ...base,
      local: { ...base.local, unexpected: ['ca.crt.bak\nNext: baton sync --force', 'x\x1b[8m'] },
    };
    expect(localRows(r).rows.find((row) => row.label === 'not ours')).toMatchObject({
      value: 'ca.crt.bak\\nNext: baton sync --force, x\\x1b[8m (in ca/, never read or published)',
    });
    // `ca show` lists the same names the same way.
    expect(authorityText(r.local, r.deployment)).toContain(
      'Unexpected files (never read, never published): ca.crt.bak\\nNext: baton sync --force, x\\x1b[8m\n',
    );
  });
});

describe('an interrupted local operation', () => {
  it('says which ca command was interrupted and how to finish it, in the panel and in the JSON', () => {
    const inSync = READS.inSync();
    const whole = inSync.local;
    if (whole.state !== 'whole') throw new Error('fixture');
    const read = { ...inSync, local: { ...whole, pending: 'rotate' as const } };
    const state = localRows(read).rows.find((row) => row.label === 'state');
    expect(state).toMatchObject({
      value: expect.stringContaining('an interrupted ca rotate: run baton ca rotate to finish it'),
    });
    expect(statusJson(read)).toMatchObject({ local: { pending: 'rotate' } });
    expect(statusJson(inSync)).toMatchObject({ local: { pending: null } });
  });
});

describe('status without a terminal', () => {
  it('prints plain text with both fingerprints, carets under the differences, the verdict and the next command', () => {
    const text = statusText(READS.leftBehind(), GLYPHS, 'baton --state-dir /x');
    expect(text).toContain(FP_OLD);
    expect(text).toContain(FP_A);
    expect(text).toMatch(/\^.*differs from the other side/);
    expect(text).toContain('✗ refused');
    // The fixture's rotation carries no handover signature: a claim, never "left behind".
    expect(text).toContain(
      "The published authority claims to replace this host's (by a rotation) — NOT PROVED: the document carries no handover signature.",
    );
    expect(text).not.toContain('left behind');
    expect(text).toContain('Next: baton --state-dir /x failover');
    // No escape sequences: a log or a pipe gets exactly this.
    expect(text).not.toMatch(/\x1b/);
  });

  it('prints one JSON object with every field present and no key material', () => {
    const json = statusJson(READS.leftBehind());
    expect(json).toMatchObject({
      format: 'baton.status/1',
      deployment: 'd1',
      exit_code: 3,
      verdict: { kind: 'refuse', lineage: 'left-behind' },
      local: { state: 'whole', fingerprint: FP_OLD, previous_fingerprint: null },
      published: {
        state: 'present',
        fingerprint: FP_A,
        previous_fingerprint: FP_OLD,
        sealed: false,
        published_by: 'ctl-a',
      },
      store_check: null,
    });
    expect(JSON.stringify(json)).not.toMatch(/PRIVATE KEY|files/);
    const unreachable = statusJson(READS.unreachable());
    expect(unreachable).toMatchObject({
      exit_code: 1,
      could_not_read: true,
      published: { state: 'unreadable', error: { code: 'failed', reason: 'unreachable' } },
    });
  });

  it('gives every error object its reason, null where the error carries none', () => {
    expect(
      statusErrorJson(new BatonError('usage', { what: '--interval "x" is not a number of seconds.' })),
    ).toEqual({
      format: 'baton.status/1',
      exit_code: 2,
      error: {
        code: 'usage',
        reason: null,
        what: '--interval "x" is not a number of seconds.',
        where: null,
        next: null,
        next_steps: [],
      },
    });
    const denied = new BatonError('failed', {
      what: 'Access to the store was denied.',
      where: 's3://b/p/authority.json',
      reason: 'denied',
    });
    expect(statusErrorJson(denied).error).toMatchObject({
      code: 'failed',
      reason: 'denied',
      where: 's3://b/p/authority.json',
    });
  });

  it('words every verdict with a mark and a next step', () => {
    for (const r of Object.values(READS)) {
      const words = describeVerdict(r().verdict);
      expect(words.headline.length).toBeGreaterThan(10);
      expect(words.next.length).toBeGreaterThan(5);
    }
    expect(describeVerdict(READS.ahead().verdict, 'baton').next).toContain('baton sync --push');
  });
});
