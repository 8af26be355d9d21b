/**
 * The rules of the app's part (docs/mesh-rotation.md "The app, not only its file"), without a
 * database: what a reload's stderr may keep, how a pair's app state is decided from the census
 * and the journal, the census's bounds and writes, the inventory's fields, the reload's runner
 * (a real `sh`, a real process group, a real bound), and the override bound to the evidence.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appBehindCode, appBehindRefusal, type BehindPair } from '../../src/mesh/app-behind-guard.js';
import { appNeedsAction, appStatus, type AppInput } from '../../src/mesh/app-status.js';
import { parseInventory } from '../../src/mesh/inventory.js';
import { redactStderr, RELOAD_STDERR_LINES, type ReloadOutcome } from '../../src/mesh/reload.js';
import { CENSUS_STARTS, parseCensus } from '../../src/mesh/session-record.js';
import { SessionCensus } from '../../src/provisioner/session-census.js';
import {
  parseRunAnswer,
  preparedRunInput,
  remotePreparedRun,
  remoteRunCommand,
} from '../../src/transport/machine-command.js';
import { runLocalCommand } from '../../src/transport/local-transport.js';
import { agentInput } from '../../src/transport/remote-scripts.js';
import type { PlannedPair } from '../../src/mesh/rotation-plan.js';
import { BatonError } from '../../src/errors.js';
import { appPreviewLines } from '../../src/app/rotation-app-text.js';
import { appHooks } from '../../src/mesh/reload.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-app-rules-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("a reload's stderr", () => {
  it('keeps no secret: the delivered ones exactly, a password= value, any long base64url run; and is bounded', () => {
    const secret = 'Zk3vQ9xPq7LmN2bV8cR4tY6uI1oP0aSdFgHjKlZxCvB';
    const lines = redactStderr(
      `starting\nread ${secret} from the file\nuser=web1_app_b password='p\\'w d' host=x\nkey AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH1234\n`,
      [secret],
    );
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines.join('\n')).not.toContain("p\\'w d");
    expect(lines.join('\n')).not.toContain('AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH1234');
    expect(lines).toEqual([
      'starting',
      'read [secret] from the file',
      'user=web1_app_b password=[secret] host=x',
      'key [secret]',
    ]);
    const many = redactStderr(
      Array.from({ length: 50 }, (_, i) => `line ${i} ${'x'.repeat(300)}`).join('\n'),
    );
    expect(many).toHaveLength(RELOAD_STDERR_LINES);
    expect(many[0]).toMatch(/^line 45 /);
    expect(many.every((l) => l.length <= 201)).toBe(true);
  });
});

const census = (login: string, starts: string[]) => ({
  format: 'baton.sessions/1' as const,
  login,
  open: starts.length,
  newest_start: starts[0] ?? null,
  recent_starts: starts,
  clients: ['10.0.0.5'],
  since: '2026-12-01T00:00:00.000Z',
  at: '2026-12-01T00:00:00.000Z',
});
const MOVED = Date.parse('2026-12-01T12:00:00.000Z');
const at = (ms: number) => new Date(MOVED + ms).toISOString();
const base: AppInput = {
  consumer: 'web2-app',
  live: 'web2_app_b',
  left: 'web2_app_a',
  movedAtMs: MOVED,
  lastReload: undefined,
  liveCensus: undefined,
  leftCensus: undefined,
};
const reload = (result: ReloadOutcome['result'], ms: number): ReloadOutcome => ({
  consumer: 'web2-app',
  machine: 'web2',
  pairs: ['pg-main:web2-app'],
  result,
  ...(result === 'failed' ? { exitCode: 7 } : {}),
  durationMs: 40,
  stderr: [],
  at: at(ms),
});

describe("a pair's app, from the census and the journal", () => {
  it('is behind on evidence only: new sessions on the left login after the move (and its grace), naming login, count, newest and clients', () => {
    const behind = appStatus({
      ...base,
      leftCensus: census('web2_app_a', [at(3000), at(2500), at(100), at(-500)]),
    });
    expect(behind.takes).toBe('behind');
    expect(behind.behind).toEqual({
      login: 'web2_app_a',
      sessions: 2,
      newest: at(3000),
      clients: ['10.0.0.5'],
    });
    expect(behind.detail).toContain('web2_app_a, the login its file left');
    expect(appNeedsAction(behind)).toBe(true);
    // Sessions from before the move, or within its grace, are no evidence.
    expect(
      appStatus({ ...base, leftCensus: census('web2_app_a', [at(1900), at(100), at(-500)]) }).takes,
    ).toBe('not-known');
    // After a reload that succeeded, only sessions after the reload count.
    expect(
      appStatus({ ...base, lastReload: reload('ok', 5000), leftCensus: census('web2_app_a', [at(3000)]) })
        .takes,
    ).toBe('reloaded');
    expect(
      appStatus({ ...base, lastReload: reload('ok', 5000), leftCensus: census('web2_app_a', [at(7500)]) })
        .takes,
    ).toBe('behind');
  });

  it('says reloaded (when), reload-failed, re-reads (seen) or not known — and only the failed reload and behind need action', () => {
    const ok = appStatus({ ...base, lastReload: reload('ok', 200) });
    expect(ok).toMatchObject({ takes: 'reloaded', reloadedAt: at(200) });
    const failed = appStatus({ ...base, lastReload: reload('failed', 200) });
    expect(failed.takes).toBe('reload-failed');
    expect(failed.detail).toContain('exit 7');
    expect(appStatus({ ...base, lastReload: reload('timed-out', 200) }).detail).toContain('timed out');
    const seen = appStatus({ ...base, liveCensus: census('web2_app_b', [at(4000)]) });
    expect(seen).toMatchObject({ takes: 're-reads', seenAt: at(4000) });
    const unknown = appStatus({ ...base, movedAtMs: undefined });
    expect(unknown.takes).toBe('not-known');
    expect([ok, seen, unknown].map(appNeedsAction)).toEqual([false, false, false]);
    expect(appNeedsAction(failed)).toBe(true);
  });
});

describe('the session census', () => {
  it('keeps the most recent starts and clients, bounded, and writes a record only when it changed', () => {
    const dir = tempDir();
    let now = Date.parse('2026-12-01T12:00:00.000Z');
    const c = new SessionCensus(dir, () => new Date(now));
    const session = (i: number, addr: string | null = '10.0.0.5') => ({
      login: 'web1_app_a',
      pid: 100 + i,
      backendStart: new Date(now - 1000 + i).toISOString(),
      clientAddr: addr,
      applicationName: 'app',
    });
    const open = [session(1), session(2, null)];
    expect(c.observe(['web1_app_a', 'web1_app_b'], open)).toEqual(['web1_app_a', 'web1_app_b']);
    const file = path.join(dir, '.sessions', 'web1_app_a');
    const first = parseCensus(readFileSync(file, 'utf8'))!;
    expect(first).toMatchObject({ open: 2, clients: [null, '10.0.0.5'] });
    expect(first.recent_starts).toHaveLength(2);
    const written = readFileSync(file, 'utf8');
    now += 100;
    // The same sessions again: nothing to write (not even the time).
    expect(c.observe(['web1_app_a', 'web1_app_b'], open)).toEqual([]);
    expect(readFileSync(file, 'utf8')).toBe(written);
    for (let i = 0; i < 40; i++) {
      now += 100;
      c.observe(['web1_app_a'], [session(i + 10, `10.0.1.${i}`)]);
    }
    const last = parseCensus(readFileSync(file, 'utf8'))!;
    expect(last.recent_starts).toHaveLength(CENSUS_STARTS);
    expect(last.clients).toHaveLength(5);
    expect(last.clients[0]).toBe('10.0.1.39');
    expect(last.open).toBe(1);
    expect(JSON.stringify(last)).not.toMatch(/password|secret/);
  });

  it('reads a damaged record as none: a field of the wrong type, another format, or no JSON', () => {
    const record = {
      format: 'baton.sessions/1',
      login: 'web1_app_a',
      open: 1,
      newest_start: '2026-12-01T10:00:00Z',
      recent_starts: ['2026-12-01T10:00:00Z'],
      clients: [null],
      since: '2026-12-01T09:00:00Z',
      at: '2026-12-01T10:00:00Z',
    };
    expect(parseCensus(JSON.stringify(record))).toEqual(record);
    expect(parseCensus(JSON.stringify({ ...record, oldest_open: null }))).toEqual({
      ...record,
      oldest_open: null,
    });
    expect(parseCensus(JSON.stringify({ ...record, open: '1' }))).toBeUndefined();
    expect(parseCensus(JSON.stringify({ ...record, recent_starts: [1] }))).toBeUndefined();
    expect(parseCensus(JSON.stringify({ ...record, format: 'baton.sessions/2' }))).toBeUndefined();
    expect(parseCensus('{"format":')).toBeUndefined();
  });
});

describe("the inventory's app fields", () => {
  const head = [
    'machines:',
    '  - { name: db1, address: /srv/db1, transport: local }',
    '  - { name: web1, address: /srv/web1, transport: local }',
  ].join('\n');
  it('reads reload: (default 30 s) and connect: (defaults 5432, postgres)', () => {
    const inv = parseInventory(
      `${head}\nproviders:\n  - { name: pg-main, machine: db1, kind: postgres, connect: { host: db1.internal } }\nconsumers:\n  - { name: web1-app, machine: web1, reads: once, uses: [pg-main], reload: 'systemctl restart web1-app' }\n`,
      '/srv/mesh.yaml',
    );
    expect(inv.providers[0]!.connect).toEqual({ host: 'db1.internal', port: 5432, database: 'postgres' });
    expect(inv.consumers[0]!.reload).toEqual({ command: 'systemctl restart web1-app', timeoutMs: 30_000 });
  });
  it('refuses reload_timeout without reload, and an unknown field under connect, naming them', () => {
    const refused = (text: string) => {
      try {
        parseInventory(text, '/srv/mesh.yaml');
      } catch (error) {
        expect(error).toBeInstanceOf(BatonError);
        return (error as BatonError).what;
      }
      throw new Error('accepted');
    };
    expect(
      refused(
        `${head}\nproviders:\n  - { name: pg-main, machine: db1, kind: postgres }\nconsumers:\n  - { name: web1-app, machine: web1, reads: once, uses: [pg-main], reload_timeout: 5 }\n`,
      ),
    ).toContain('reload_timeout: without reload:');
    expect(
      refused(
        `${head}\nproviders:\n  - { name: pg-main, machine: db1, kind: postgres, connect: { host: h, sslmode: disable } }\nconsumers: []\n`,
      ),
    ).toContain('Unknown field "sslmode"');
  });
});

describe("a reload's runner", () => {
  it('runs sh -c in the root with stdin closed and BATON_ROOT set; keeps the end of stderr and the exit status', async () => {
    const root = tempDir();
    const result = await runLocalCommand(
      'web1',
      root,
      {
        command:
          'read x && echo "stdin was open" >&2; echo out; echo "root=$BATON_ROOT file=$BATON_CONSUMER_FILE" >&2; exit 7',
        env: { BATON_CONSUMER_FILE: '/var/lib/baton/mesh/consumes/pg-main/web1_app' },
        timeoutMs: 5_000,
      },
      AbortSignal.timeout(10_000),
    );
    expect(result.exitCode).toBe(7);
    expect(result.timedOut).toBe(false);
    expect(result.stderrTail.trim()).toBe(`root=${root} file=/var/lib/baton/mesh/consumes/pg-main/web1_app`);
  });

  it('ends the whole process group at its bound, and says it timed out', async () => {
    const root = tempDir();
    const started = Date.now();
    const result = await runLocalCommand(
      'web1',
      root,
      { command: `(sleep 30; touch "${root}/survived") & sleep 30`, env: {}, timeoutMs: 300 },
      AbortSignal.timeout(10_000),
    );
    expect(result).toMatchObject({ timedOut: true, exitCode: undefined });
    // Not the 30 s the group would have run.
    expect(Date.now() - started).toBeLessThan(15_000);
    // The background child was in the group: it is gone too.
    await new Promise((r) => setTimeout(r, 200));
    expect(
      execFileSync('sh', ['-c', `ps -eo args | grep -c "[t]ouch ${root}/survived" || true`])
        .toString()
        .trim(),
    ).toBe('0');
  });

  it('the remote script (what ssh hands the login shell) answers rc, timed-out and the stderr tail; it times out on the machine', () => {
    const run = (command: string, timeoutMs: number) =>
      parseRunAnswer(
        'web1',
        execFileSync(
          'sh',
          ['-c', remoteRunCommand({ command, env: { BATON_CONSUMER: 'web1-app' }, timeoutMs })],
          { input: agentInput() },
        ).toString(),
        1,
      );
    expect(run('echo "for $BATON_CONSUMER" >&2; exit 3', 5_000)).toMatchObject({
      exitCode: 3,
      timedOut: false,
      stderrTail: 'for web1-app',
    });
    expect(run('sleep 5', 1_000)).toMatchObject({ timedOut: true, exitCode: undefined });
  });

  it('the prepared run (a session opened while the receipt is awaited) runs only on go, with the environment sent then; closed unused it runs nothing', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-prepared-'));
    try {
      const mark = path.join(dir, 'ran');
      const command = `echo "$BATON_CONSUMER_FILE" > ${mark}; echo "for $BATON_CONSUMER" >&2; exit 4`;
      const answer = execFileSync('sh', ['-c', remotePreparedRun(command, 5_000)], {
        input: agentInput(
          preparedRunInput({ BATON_CONSUMER: 'web1-app', BATON_CONSUMER_FILE: '/a file/with spaces' }),
        ),
      }).toString();
      expect(parseRunAnswer('web1', answer, 1)).toMatchObject({
        exitCode: 4,
        timedOut: false,
        stderrTail: 'for web1-app',
      });
      expect(readFileSync(mark, 'utf8')).toBe('/a file/with spaces\n');
      rmSync(mark);
      // stdin closed without `go` (the rotation ended first): nothing ran, nothing answered.
      const unused = execFileSync('sh', ['-c', remotePreparedRun(`: > ${mark}`, 5_000)], {
        input: agentInput(),
      });
      expect(unused.toString()).toBe('');
      expect(() => readFileSync(mark)).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the override of an app behind', () => {
  it('is the code of the evidence: another code, or an old one, is refused naming the pair and the login', () => {
    const behind = { login: 'web2_app_a', sessions: 3, newest: at(3000), clients: ['10.0.0.5'] };
    const pair = { key: 'pg-main:web2-app' } as PlannedPair;
    const b: BehindPair = {
      pair,
      behind,
      detail: 'web2-app’s app is BEHIND on web2_app_a',
      code: appBehindCode(pair.key, behind),
    };
    expect(b.code).toMatch(/^[0-9a-f]{8}$/);
    const refusal = appBehindRefusal([b], ['00000000'])!;
    expect(refusal.what).toContain('pg-main:web2-app');
    expect(refusal.what).toContain('web2_app_a');
    expect(refusal.changed).toBe('Nothing was generated and nothing was sent.');
    const old = appBehindCode(pair.key, { ...behind, newest: at(1000) });
    expect(appBehindRefusal([b], [old])).toBeInstanceOf(BatonError);
    expect(appBehindRefusal([b], [b.code])).toBeUndefined();
  });
});

describe("the preview's app lines", () => {
  it('say, per pair, whether the new credential is tried from the consumer, and per consumer whether it is reloaded', () => {
    const inv = parseInventory(
      [
        'machines:',
        '  - { name: db1, address: /srv/db1, transport: local }',
        '  - { name: db2, address: /srv/db2, transport: local }',
        '  - { name: web1, address: /srv/web1, transport: local }',
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres, connect: { host: db1.internal, database: app } }',
        '  - { name: pg-audit, machine: db2, kind: postgres }',
        'consumers:',
        "  - { name: web1-app, machine: web1, reads: once, uses: [pg-main, pg-audit], reload: 'systemctl restart web1-app', reload_timeout: 12 }",
        '',
      ].join('\n'),
      '/srv/mesh.yaml',
    );
    const lines = appPreviewLines(planRotation(inv, { by: 'consumer', name: 'web1-app' }), appHooks(inv));
    expect(lines).toEqual([
      '  test login pg-main:web1-app: as web1_app to db1.internal:5432/app, from web1, before web1-app moves; refused = not moved',
      '  test login pg-audit:web1-app: none — pg-audit has no connect:, so the new credential will NOT be tried from web1 before web1-app moves',
      '  reload web1-app: `systemctl restart web1-app` on web1 once its end is committed (at most 12 s)',
    ]);
  });
});
