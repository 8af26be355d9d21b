/**
 * `mesh status` and the provisioner's check of the database itself: the receipt says what
 * PostgreSQL holds; old receipts (without the check) read as before.
 */
import { describe, expect, it } from 'vitest';
import { meshStatusJson, meshStatusLines, nextStep, pairNext } from '../../src/app/mesh-status-text.js';
import { suggester } from '../../src/suggest-command.js';
import { formatReceipt, parseReceipt, secretDigest, type Receipt } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import { classifyPair, meshStatusExitCode, pairStatus, type EndReading } from '../../src/mesh/mesh-status.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from './mesh-fixture.js';

const pair = planRotation(meshInventory(1), { by: 'all' }).pairs.find((p) => p.key === 'pg-main:web1-app')!;
const digest = secretDigest('the-secret');
const end: EndReading = { read: true, live: digest, next: undefined, liveModifiedMs: 0 };
const receipt = (extra: Partial<Receipt> = {}): Receipt => ({
  role: pair.role,
  digest,
  applied_at: '2026-11-30T12:00:00.000Z',
  ...extra,
});
const status = (r: Receipt) =>
  pairStatus(
    pair,
    { provider: end, consumer: end, receipt: r },
    journalHistory([]),
    Date.parse('2026-11-30T12:05:00Z'),
    undefined,
  );

describe('the receipt format', () => {
  it('reads a receipt written before the database check exactly as before, and one with the check with it', () => {
    const old = `{"role":"web1_app","digest":"${digest}","applied_at":"2026-11-30T12:00:00.000Z"}\n`;
    expect(parseReceipt(old)).toEqual({ role: 'web1_app', digest, applied_at: '2026-11-30T12:00:00.000Z' });
    const checked = receipt({
      database: { found: 'nologin', since: '2026-11-30T12:01:00.000Z', problem: 'skipped this cycle' },
    });
    expect(parseReceipt(formatReceipt(checked))).toEqual(checked);
  });

  it('drops a check of a shape it does not know, keeping the receipt', () => {
    const text = JSON.stringify({ ...receipt(), database: { found: 'exploded', since: 'x' } });
    expect(parseReceipt(text)).toEqual(receipt());
  });
});

describe('mesh status of a pair the database changed', () => {
  it.each([
    ['password-changed', 'its password was changed in the database'],
    ['dropped', 'the role was dropped'],
    ['nologin', 'the role was set NOLOGIN'],
    ['expired', "the role's VALID UNTIL has passed"],
  ] as const)('%s is changed-in-db, exit 3, naming what was found', (found, words) => {
    const s = status(receipt({ database: { found, since: '2026-11-30T12:01:00.000Z' } }));
    expect(s.state).toBe('changed-in-db');
    expect(s.detail).toBe(
      `PostgreSQL on db1 no longer accepts web1_app's delivered password: ${words} (found 2026-11-30T12:01:00.000Z); the provisioner puts the delivered password back on its next cycle`,
    );
    expect(meshStatusExitCode([s])).toBe(3);
    expect(nextStep(s)).toBe(
      'nothing by hand: the provisioner on db1 puts the delivered password back; if this stays, check its log',
    );
  });

  it('one the provisioner could not put back says why, and what to do', () => {
    const s = status(
      receipt({
        database: {
          found: 'nologin',
          since: '2026-11-30T12:01:00.000Z',
          problem: 'the database refused it (permission denied)',
        },
      }),
    );
    expect(s.detail).toContain(
      'the provisioner could not put the delivered password back: the database refused it (permission denied)',
    );
    expect(nextStep(s)).toBe(
      'fix what keeps the provisioner on db1 from putting it back (its log names it), then baton mesh status',
    );
    // The command is data; only the rendering adds the flags and --inventory.
    expect(pairNext(s)).toEqual([expect.stringContaining('fix what keeps'), { args: ['mesh', 'status'] }]);
    expect(nextStep(s, suggester({ stateDir: '/srv/b state', inventory: '/etc/mesh.yaml' }, false))).toBe(
      "fix what keeps the provisioner on db1 from putting it back (its log names it), then baton --state-dir '/srv/b state' mesh status --inventory /etc/mesh.yaml",
    );
  });

  it('as-set, an old receipt, and a repaired one are applied (exit 0); the repair is named', () => {
    expect(status(receipt()).state).toBe('applied');
    expect(status(receipt({ database: { found: 'as-set', since: '2026-11-30T12:00:00.000Z' } })).state).toBe(
      'applied',
    );
    const repaired = status(
      receipt({ database: { found: 'as-set', since: '2026-11-30T12:02:00.000Z', restored: 'dropped' } }),
    );
    expect(repaired.state).toBe('applied');
    expect(repaired.detail).toBe(
      'both ends equal; pg-main applied it (put back at 2026-11-30T12:02:00.000Z: the role was dropped)',
    );
    expect(meshStatusExitCode([repaired])).toBe(0);
  });

  it('a check in a receipt for another credential does not decide: that pair is pending', () => {
    const other = receipt({
      digest: secretDigest('older'),
      database: { found: 'dropped', since: 'x' },
    });
    expect(classifyPair(pair, { provider: end, consumer: end, receipt: other }).state).toBe('pending');
  });
});

describe('what mesh status prints of the database check', () => {
  const changed = status(
    receipt({
      database: {
        found: 'nologin',
        since: '2026-11-30T12:01:00.000Z',
        problem: 'skipped this cycle',
        verifier: `sha256:${'ab'.repeat(32)}`,
      },
    }),
  );
  const repaired = status(
    receipt({
      database: {
        found: 'as-set',
        since: '2026-11-30T12:02:00.000Z',
        restored: 'dropped',
        verifier: `sha256:${'cd'.repeat(32)}`,
      },
    }),
  );

  it('--json gives each pair its finding, since, restored and problem (null when none), and never the verifier digest', () => {
    const doc = meshStatusJson(
      [changed, repaired, status(receipt())],
      'every pair',
      Date.parse('2026-11-30T12:05:00Z'),
      undefined,
      3,
    ) as { pairs: { database: unknown }[] };
    expect(doc.pairs.map((p) => p.database)).toEqual([
      {
        finding: 'nologin',
        since: '2026-11-30T12:01:00.000Z',
        restored: null,
        problem: 'skipped this cycle',
      },
      { finding: 'as-set', since: '2026-11-30T12:02:00.000Z', restored: 'dropped', problem: null },
      null,
    ]);
    const text = JSON.stringify(doc);
    expect(text).not.toContain('ab'.repeat(32));
    expect(text).not.toContain('cd'.repeat(32));
    expect(text).not.toContain('verifier');
  });

  it('the plain rows stay aligned with changed-in-db among them', () => {
    const rows = meshStatusLines(
      [changed, repaired, status(receipt({ digest: secretDigest('other') }))],
      'every pair',
    ).filter((l) => / pg-main:/.test(l));
    expect(rows.map((r) => r.split(' pg-main:')[0])).toEqual([
      '✗ changed-in-db',
      '… pending      ',
      '✓ applied      ',
    ]);
  });
});
