/**
 * `mesh status` of alternating pairs, read over the strict fake transport: the provider end is
 * the live login's file (`R+x`), the other login is valid / revoked / missing, and a single
 * pair beside them reads, prints and serialises exactly as before.
 */
import { describe, expect, it } from 'vitest';
import { meshStatusJson, meshStatusLines } from '../../src/app/mesh-status-text.js';
import { formatConsumerConninfo, type LoginSlot } from '../../src/mesh/alternating.js';
import { digestPrefix, formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { parseInventory } from '../../src/mesh/inventory.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import type { JournalRecord } from '../../src/mesh/journal.js';
import { meshStatusExitCode } from '../../src/mesh/mesh-status.js';
import { readMeshStatus } from '../../src/mesh/read-mesh-status.js';
import { loginFilePaths } from '../../src/mesh/rotation-plan.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { fakeMesh } from './fake-transport.js';
import { previousPath } from '../../src/mesh/transport.js';
import { sessionsPath } from '../../src/mesh/session-record.js';

const inventory = parseInventory(
  [
    'mesh_dir: /m',
    'machines:',
    '  - { name: db1, address: db1.internal, transport: ssh }',
    '  - { name: web1, address: web1.internal, transport: ssh }',
    'providers:',
    '  - { name: pg-main, machine: db1, kind: postgres }',
    'consumers:',
    '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main], credential: alternating }',
    '  - { name: web1-worker, machine: web1, reads: each-connection, uses: [pg-main] }',
    '',
  ].join('\n'),
  '/srv/mesh.yaml',
);
const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
const alt = plan.pairs.find((p) => p.consumer === 'web1-app')!;
const single = plan.pairs.find((p) => p.consumer === 'web1-worker')!;
const receipt = (role: string, secret: string) =>
  formatReceipt({ role, digest: secretDigest(secret), applied_at: '2026-12-01T17:00:00.000Z' });

/** Both pairs applied; the alternating consumer on login `live`; the other login's file and receipt as `other` says. */
function mesh(live: LoginSlot | 'switching', other: 'both' | 'no-file' | 'no-receipt' = 'both') {
  const slots = (['a', 'b'] as const).map((slot) => loginFilePaths(alt, slot));
  const fake = fakeMesh(['db1', 'web1'], plan, {
    db1: slots.flatMap((s) => [s.providerPath, s.receiptPath]),
  });
  const db1 = fake.machines.db1!.files;
  const web1 = fake.machines.web1!.files;
  db1.set(single.providerPath, 'single-secret');
  db1.set(single.receiptPath, receipt(single.role, 'single-secret'));
  web1.set(single.consumerPath, 'single-secret');
  if (live === 'switching') {
    db1.set(alt.providerPath, 'plain-secret');
    db1.set(alt.receiptPath, receipt(alt.role, 'plain-secret'));
    web1.set(alt.consumerPath, 'plain-secret');
  } else {
    const [on, off] = live === 'a' ? slots : [slots[1]!, slots[0]!];
    db1.set(on!.providerPath, 'live-secret');
    db1.set(on!.receiptPath, receipt(`web1_app+${live}`, 'live-secret'));
    if (other !== 'no-file') db1.set(off!.providerPath, 'other-secret');
    if (other !== 'no-receipt') db1.set(off!.receiptPath, receipt('web1_app+x', 'other-secret'));
    web1.set(alt.consumerPath, formatConsumerConninfo(`web1_app_${live}`, 'live-secret'));
  }
  return fake;
}

/** A finished rotation of the alternating pair, `revoked` or not. */
const finished = (id: string, revoked: boolean): JournalRecord => ({
  id,
  at: '2026-12-01T17:00:00.000Z',
  operator: 'test',
  phase: 'applied',
  selector: '--pair pg-main:web1-app',
  holders: [],
  results: [],
  pairs: [
    {
      key: alt.key,
      provider: 'pg-main',
      consumer: 'web1-app',
      role: 'web1_app',
      provider_machine: 'db1',
      consumer_machine: 'web1',
      provider_path: '',
      consumer_path: '',
      receipt_path: '',
      ...(revoked ? { revoked: true } : {}),
    },
  ],
  applied: [alt.key],
});

/** The last rotation asked --revoke-previous --end-sessions and named the fresh secret `fresh` as its target. */
const revokeRecord = (fresh: string): JournalRecord => {
  const r = finished('r1', false);
  return {
    ...r,
    pairs: r.pairs.map((p) => ({ ...p, revoke_target: digestPrefix(secretDigest(fresh)) })),
    revoke_previous: { end_sessions: true },
  };
};

const read = (fake: ReturnType<typeof mesh>, records: JournalRecord[] = []) =>
  readMeshStatus(plan, fake.transportFor, journalHistory(records), {
    concurrency: 2,
    nowMs: Date.parse('2026-12-02T00:00:00Z'),
    maxAgeMs: undefined,
  });

describe('mesh status of an alternating pair', () => {
  it('reads the live login file: applied, the live login and the other valid', async () => {
    const fake = mesh('b');
    const statuses = await read(fake);
    const status = statuses.find((s) => s.pair.key === alt.key)!;
    expect(status.state).toBe('applied');
    expect(status.pair.providerPath).toBe('/m/provides/pg-main/web1_app+b');
    expect(status.logins).toEqual({ live: 'web1_app_b', other: { login: 'web1_app_a', state: 'valid' } });
    expect(meshStatusLines(statuses, plan.selectorText)).toContain(
      '    logins: live web1_app_b; other web1_app_a valid',
    );
    expect(fake.unarranged).toEqual([]);
    // Status reads only: one digests and one readTexts per machine, nothing written.
    expect(fake.writes()).toBe(0);
  });

  it('a consumer end that names the live login but is not the file delivered with it (the journal says which) is drifted', async () => {
    const base = finished('r1', false);
    const delivered: JournalRecord = {
      ...base,
      phase: 'prepared',
      pairs: [
        {
          ...base.pairs[0]!,
          credential: 'alternating',
          login: 'web1_app_b',
          digest: secretDigest('live-secret'),
          consumer_digest: secretDigest(formatConsumerConninfo('web1_app_b', 'live-secret')),
        },
      ],
    };
    // As delivered: applied.
    expect((await read(mesh('b'), [delivered, base])).find((s) => s.pair.key === alt.key)!.state).toBe(
      'applied',
    );
    // Edited by hand: the same login, another password.
    const edited = mesh('b');
    edited.machines.web1!.files.set(alt.consumerPath, formatConsumerConninfo('web1_app_b', 'typed-by-hand'));
    const status = (await read(edited, [delivered, base])).find((s) => s.pair.key === alt.key)!;
    expect(status.state).toBe('drifted');
    expect(status.detail).toContain(
      "names web1_app_b but is not the file delivered with db1's /m/provides/pg-main/web1_app+b",
    );
    // Without a journal that knows the provider file, the pair reads as before: nothing to compare with.
    expect((await read(edited, [])).find((s) => s.pair.key === alt.key)!.state).toBe('applied');
  });

  it('the other login is revoked after a finished rotation that revoked it, and valid again after one that did not', async () => {
    expect(
      (await read(mesh('a'), [finished('r1', true)])).find((s) => s.pair.key === alt.key)!.logins!.other,
    ).toEqual({ login: 'web1_app_b', state: 'revoked' });
    expect(
      (await read(mesh('a'), [finished('r1', true), finished('r2', false)])).find(
        (s) => s.pair.key === alt.key,
      )!.logins!.other!.state,
    ).toBe('valid');
  });

  it('a revoke the provisioner confirmed after baton exited is revoked: the journal kept its target (a digest prefix), the receipt now shows it', async () => {
    const unconfirmed = (target: string): JournalRecord => {
      const base = finished('r1', false);
      return { ...base, pairs: [{ ...base.pairs[0]!, revoke_target: target }] };
    };
    // The other login's receipt is for 'other-secret' (mesh()): the revoke's fresh secret, applied later.
    const confirmed = unconfirmed(digestPrefix(secretDigest('other-secret')));
    expect(confirmed.pairs[0]!.revoke_target).not.toContain(secretDigest('other-secret').slice(-20));
    expect((await read(mesh('a'), [confirmed])).find((s) => s.pair.key === alt.key)!.logins!.other).toEqual({
      login: 'web1_app_b',
      state: 'revoked',
    });
    // Not applied yet (the receipt is for another secret): still valid, as the old password may work.
    expect(
      (await read(mesh('a'), [unconfirmed(digestPrefix(secretDigest('not-yet')))])).find(
        (s) => s.pair.key === alt.key,
      )!.logins!.other!.state,
    ).toBe('valid');
  });

  it('the other login is missing without its provider file or its receipt', async () => {
    for (const other of ['no-file', 'no-receipt'] as const) {
      expect(
        (await read(mesh('a', other), [finished('r1', true)])).find((s) => s.pair.key === alt.key)!.logins!
          .other,
      ).toEqual({ login: 'web1_app_b', state: 'missing' });
    }
  });

  it('right after a switch from one role the other login, with no file of its own, is copied (valid), and says whose password it holds', async () => {
    const base = finished('r1', false);
    const switched: JournalRecord = {
      ...base,
      pairs: [
        {
          ...base.pairs[0]!,
          credential: 'alternating',
          login: 'web1_app_a',
          retire: ['/m/provides/pg-main/web1_app'],
        },
      ],
    };
    const statuses = await read(mesh('a', 'no-file'), [switched]);
    expect(statuses.find((s) => s.pair.key === alt.key)!.logins!.other).toEqual({
      login: 'web1_app_b',
      state: 'copied',
    });
    expect(meshStatusLines(statuses, plan.selectorText)).toContain(
      "    logins: live web1_app_a; other web1_app_b valid (no file of its own yet: it holds web1_app's password from before the switch, copied by the provisioner; the next rotation gives it its own)",
    );
    // A later rotation that was not a switch: a login without a file is missing again.
    expect(
      (await read(mesh('a', 'no-file'), [switched, finished('r2', false)])).find(
        (s) => s.pair.key === alt.key,
      )!.logins!.other!.state,
    ).toBe('missing');
  });

  it('a machine that cannot be read: the other login is unknown, or the live one when the consumer is not read', async () => {
    const providerDown = mesh('a');
    providerDown.machines.db1!.unreachable = 'ssh: connect to host db1.internal port 22: No route to host';
    const onDb1 = (await read(providerDown)).find((s) => s.pair.key === alt.key)!;
    expect(onDb1.state).toBe('unreachable');
    expect(onDb1.logins).toEqual({ live: 'web1_app_a', other: { login: 'web1_app_b', state: 'unknown' } });
    const consumerDown = mesh('a');
    consumerDown.machines.web1!.unreachable = 'ssh: connect to host web1.internal port 22: No route to host';
    const statuses = await read(consumerDown);
    expect(meshStatusLines(statuses, plan.selectorText)).toContain(
      '    logins: unknown: web1 could not be read',
    );
  });

  it('a rotation left on the other login: staged (or pending while it runs), saying the live login still works', async () => {
    const other = loginFilePaths(alt, 'b').providerPath;
    const leftNext = mesh('a');
    leftNext.machines.db1!.files.set(`${other}.next`, 'new-secret');
    const staged = (await read(leftNext)).find((s) => s.pair.key === alt.key)!;
    expect([staged.state, staged.detail]).toEqual([
      'staged',
      `db1 has ${other}.next left from a rotation that did not finish; web1-app still uses web1_app_a, which works`,
    ]);

    const between = () => {
      const fake = mesh('a');
      fake.machines.db1!.files.set(previousPath(other), 'other-secret');
      fake.machines.web1!.files.set(
        `${alt.consumerPath}.next`,
        formatConsumerConninfo('web1_app_b', 'new-secret'),
      );
      return fake;
    };
    const stopped = (await read(between())).find((s) => s.pair.key === alt.key)!;
    expect([stopped.state, stopped.detail]).toEqual([
      'staged',
      'a rotation stopped between the provider commit and the consumer commit: web1-app still uses web1_app_a, which works',
    ]);
    const running = (
      await readMeshStatus(plan, between().transportFor, journalHistory([]), {
        concurrency: 2,
        nowMs: 0,
        maxAgeMs: undefined,
        running: 'mesh rotate (pid 42)',
      })
    ).find((s) => s.pair.key === alt.key)!;
    expect(running.state).toBe('pending');
    expect(running.detail).toContain(
      "web1-app's end for web1_app_b waits staged for pg-main's receipt (mesh rotate (pid 42) is running)",
    );
  });

  it('a pair being switched (its consumer still holds a bare secret) reads as one role, and says so', async () => {
    const statuses = await read(mesh('switching'));
    const status = statuses.find((s) => s.pair.key === alt.key)!;
    expect(status.state).toBe('applied');
    expect(status.logins).toEqual({ live: undefined, other: undefined });
    expect(meshStatusLines(statuses, plan.selectorText).join('\n')).toContain(
      'logins: the consumer end names no login yet (a pair being switched to alternating): it uses web1_app',
    );
  });

  it('--json: credential and logins for the alternating pair only, no digest; the single pair keeps its keys', async () => {
    const statuses = await read(mesh('a'), [finished('r1', true)]);
    const json = meshStatusJson(
      statuses,
      plan.selectorText,
      Date.parse('2026-12-02T00:00:00Z'),
      undefined,
      0,
    ) as { pairs: Record<string, unknown>[] };
    const altJson = json.pairs.find((p) => p.consumer === 'web1-app')!;
    const singleJson = json.pairs.find((p) => p.consumer === 'web1-worker')!;
    expect(altJson.credential).toBe('alternating');
    expect(altJson.logins).toEqual({ live: 'web1_app_a', other: { login: 'web1_app_b', state: 'revoked' } });
    expect(Object.keys(singleJson)).toEqual([
      'provider',
      'consumer',
      'role',
      'provider_machine',
      'consumer_machine',
      'state',
      'detail',
      'last_rotated',
      'last_rotated_source',
      'age_seconds',
      'older_than_max_age',
      'last_rotation',
      'resume_id',
      'unreadable',
      'database',
      'app',
      'confirmed',
      'armed_revoke',
      'not_revoked',
      'next',
      'next_steps',
    ]);
    expect(JSON.stringify(json)).not.toMatch(/sha256:|secret/);
    // The single pair's line is as before: no logins line follows it.
    const lines = meshStatusLines(statuses, plan.selectorText);
    const at = lines.findIndex((l) => l.includes('pg-main:web1-worker'));
    expect(lines[at + 1] ?? '').not.toContain('logins:');
  });
});

describe('sessions still open on the login the consumer left', () => {
  const census = (login: string, open: number, oldest: string | null) =>
    JSON.stringify({
      format: 'baton.sessions/1',
      login,
      open,
      oldest_open: oldest,
      newest_start: '2026-12-01T16:00:00.000Z',
      recent_starts: ['2026-12-01T16:00:00.000Z', '2026-12-01T15:00:00.000Z'],
      clients: ['10.0.0.5'],
      since: '2026-12-01T10:00:00.000Z',
      at: '2026-12-01T17:00:00.000Z',
    });

  it('status lists them (count, oldest start and age) on screen and in --json; a revoked login says its sessions stay open', async () => {
    for (const revoked of [false, true]) {
      const fake = mesh('a');
      fake.machines.db1!.files.set(
        sessionsPath(alt.receiptPath, 'web1_app_b'),
        census('web1_app_b', 2, '2026-12-01T15:00:00.000Z'),
      );
      const before = new Map(fake.machines.db1!.files);
      const statuses = await read(fake, [finished('r1', revoked)]);
      const status = statuses.find((s) => s.pair.key === alt.key)!;
      expect(status.state).toBe('applied');
      expect(status.app?.leftOpen).toEqual({
        login: 'web1_app_b',
        open: 2,
        oldest: '2026-12-01T15:00:00.000Z',
      });
      const text = meshStatusLines(
        statuses,
        plan.selectorText,
        undefined,
        Date.parse('2026-12-02T00:00:00Z'),
      ).join('\n');
      expect(text).toContain(
        `    sessions: 2 still open on web1_app_b${revoked ? ' (revoked: its password no longer opens a session, but these stay open)' : ', the login its file left'}, the oldest started 2026-12-01T15:00:00.000Z (9 h ago)`,
      );
      const json = meshStatusJson(
        statuses,
        plan.selectorText,
        Date.parse('2026-12-02T00:00:00Z'),
        undefined,
        0,
      ) as {
        pairs: { consumer: string; app: { left_open_sessions: unknown } }[];
      };
      expect(json.pairs.find((p) => p.consumer === 'web1-app')!.app.left_open_sessions).toEqual({
        login: 'web1_app_b',
        open: 2,
        oldest_start: '2026-12-01T15:00:00.000Z',
      });
      // Read-only: nothing on the machine changed.
      expect(fake.machines.db1!.files).toEqual(before);
    }
    console.log('held sessions on the left login: listed (2 open, oldest 9 h), screen and --json');
  });

  it('a --revoke-previous --end-sessions not applied yet is said to stay armed (screen and --json), and what happens when it is', async () => {
    const fake = mesh('a');
    fake.machines.db1!.files.set(
      sessionsPath(alt.receiptPath, 'web1_app_b'),
      census('web1_app_b', 2, '2026-12-01T15:00:00.000Z'),
    );
    // The revoke's fresh secret is live beside web1_app_b's receipt of its old one.
    fake.machines.db1!.files.set(loginFilePaths(alt, 'b').providerPath, 'fresh-secret');
    const before = new Map(fake.machines.db1!.files);
    const statuses = await read(fake, [revokeRecord('fresh-secret')]);
    const status = statuses.find((s) => s.pair.key === alt.key)!;
    expect(status.logins?.other).toEqual({ login: 'web1_app_b', state: 'valid' });
    expect(status.armedRevoke).toEqual({ login: 'web1_app_b', endSessions: true });
    const text = meshStatusLines(statuses, plan.selectorText, undefined, Date.parse('2026-12-02T00:00:00Z'));
    expect(text).toContain(
      "    armed: the provisioner on db1 will refuse web1_app_b's old password and END its 2 open sessions (--end-sessions) when it next applies (a --revoke-previous not applied yet); until then the old password may still work",
    );
    const json = meshStatusJson(statuses, plan.selectorText, 0, undefined, 0) as {
      pairs: { consumer: string; armed_revoke: unknown }[];
    };
    expect(json.pairs.find((p) => p.consumer === 'web1-app')!.armed_revoke).toEqual({
      login: 'web1_app_b',
      end_sessions: true,
      open_sessions: 2,
    });
    expect(fake.machines.db1!.files).toEqual(before);
    // Without an armed revoke: no line, null.
    const plain = await read(fake, [finished('r1', false)]);
    expect(meshStatusLines(plain, plan.selectorText).join('\n')).not.toContain('armed:');
    expect(
      (
        meshStatusJson(plain, plan.selectorText, 0, undefined, 0) as { pairs: { armed_revoke: unknown }[] }
      ).pairs.map((p) => p.armed_revoke),
    ).toEqual([null, null]);
    console.log(
      'armed --revoke-previous --end-sessions: said armed with 2 sessions to end, screen and --json',
    );
  });

  it('a --revoke-previous whose fresh password never went live is said NOT revoked (exit 3, the rotate that revokes as its next step), staged or not; armed only once it is live', async () => {
    for (const staged of [true, false]) {
      const fake = mesh('a');
      // baton stopped before the revoke's commit: web1_app_b keeps 'other-secret', the fresh one waits in .next (or not).
      if (staged)
        fake.machines.db1!.files.set(`${loginFilePaths(alt, 'b').providerPath}.next`, 'fresh-secret');
      const before = new Map(fake.machines.db1!.files);
      const statuses = await read(fake, [revokeRecord('fresh-secret')]);
      const status = statuses.find((s) => s.pair.key === alt.key)!;
      expect([status.state, status.logins?.other, status.armedRevoke]).toEqual([
        'applied',
        { login: 'web1_app_b', state: 'valid' },
        undefined,
      ]);
      expect(status.revokeNotDone).toEqual({ login: 'web1_app_b', staged, endSessions: true });
      expect(meshStatusExitCode(statuses)).toBe(3);
      const text = meshStatusLines(statuses, plan.selectorText).join('\n');
      expect(text).toContain(
        `    not revoked: the --revoke-previous of rotation r1 did not take effect: its fresh password never went live, so web1_app_b keeps its old password, which MAY STILL WORK${staged ? '; the fresh password staged beside its file (.next) was delivered nowhere, and the next rotation of the pair replaces it' : ''}`,
      );
      // Asked with --end-sessions: its way out asks again.
      expect(text).toContain('baton mesh rotate --pair pg-main:web1-app --revoke-previous --end-sessions');
      const json = meshStatusJson(statuses, plan.selectorText, 3, undefined, 0) as {
        pairs: {
          consumer: string;
          not_revoked: unknown;
          armed_revoke: unknown;
          next_steps: { args: string[] }[];
        }[];
      };
      const pair = json.pairs.find((p) => p.consumer === 'web1-app')!;
      expect([pair.not_revoked, pair.armed_revoke]).toEqual([
        { login: 'web1_app_b', fresh_password_staged: staged, end_sessions: true },
        null,
      ]);
      expect(pair.next_steps.map((n) => n.args)).toEqual([
        ['mesh', 'rotate', '--pair', 'pg-main:web1-app', '--revoke-previous', '--end-sessions'],
      ]);
      expect(fake.machines.db1!.files).toEqual(before);
    }
    // Its own staged file is not a leftover; one the revoke did not stage still is.
    const stray = mesh('a');
    stray.machines.db1!.files.set(`${loginFilePaths(alt, 'b').providerPath}.next`, 'someone-elses');
    const strayStatus = (await read(stray, [revokeRecord('fresh-secret')])).find(
      (s) => s.pair.key === alt.key,
    )!;
    expect(strayStatus.state).toBe('staged');
    console.log(
      'revoke never live: not_revoked (staged and not), exit 3, next: mesh rotate --revoke-previous; a stray .next still staged',
    );
  });

  it('none open: no sessions line and null in --json', async () => {
    const fake = mesh('a');
    fake.machines.db1!.files.set(sessionsPath(alt.receiptPath, 'web1_app_b'), census('web1_app_b', 0, null));
    const statuses = await read(fake);
    expect(meshStatusLines(statuses, plan.selectorText).join('\n')).not.toContain('sessions:');
    const json = meshStatusJson(statuses, plan.selectorText, 0, undefined, 0) as {
      pairs: { consumer: string; app: { left_open_sessions: unknown } }[];
    };
    expect(json.pairs.find((p) => p.consumer === 'web1-app')!.app.left_open_sessions).toBeNull();
  });
});
