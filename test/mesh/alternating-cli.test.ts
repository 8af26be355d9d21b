import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { conninfoLogin, parseConninfo } from '../../src/mesh/alternating.js';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { BIN, runBaton } from '../helpers/run-baton.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter } from './receipt-writer.js';

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-alt-cli-');
  inventory = writeLocalMesh(tmp.dir, { webs: 1 });
});
afterEach(() => tmp.cleanup());

/** web1-app's credential in the inventory: the line writeLocalMesh wrote, with or without `credential: alternating`. */
function setCredential(mode: 'single' | 'alternating'): void {
  const text = readFileSync(inventory, 'utf8').replace(
    /uses: \[pg-main\](, credential: \w+)? \}/,
    `uses: [pg-main]${mode === 'alternating' ? ', credential: alternating' : ''} }`,
  );
  writeFileSync(inventory, text);
}

/** Spawned asynchronously (runBaton): a test's stand-in provisioner writes receipts meanwhile. */
async function baton(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = await runBaton(
    ['--state-dir', path.join(tmp.dir, 'state'), ...args, '--inventory', inventory],
    { cwd: tmp.dir, env: { NO_COLOR: '1' } },
  );
  return { code: run.exitCode, stdout: run.stdout, stderr: run.stderr };
}

const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);
const read = (machine: string, file: string) => readFileSync(live(machine, file), 'utf8');
const CONSUMER = 'consumes/pg-main/web1_app';

describe('alternating credentials through the built CLI (local transport)', () => {
  it('seed single, switch to alternating, rotate a → b, switch back: the consumer always names a login whose provider file it matches', async () => {
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const seedFile = path.join(tmp.dir, 'seed');
      writeFileSync(seedFile, 'first-password\n', { mode: 0o600 });
      expect((await baton('mesh', 'seed', '--pair', 'pg-main:web1-app', '--from-file', seedFile)).code).toBe(
        0,
      );
      expect(read('web1', CONSUMER)).toBe('first-password');

      // Switch to alternating: the preview says where the consumer moves and what goes after.
      setCredential('alternating');
      const plan = await baton('mesh', 'plan', '--consumer', 'web1-app');
      expect(plan.code).toBe(0);
      expect(plan.stdout).toContain(
        "none (alternating): web1-app moves to web1_app_a once pg-main has applied its new password; then baton removes web1_app (the single role's file, switched to alternating)",
      );
      const json = JSON.parse((await baton('mesh', 'plan', '--consumer', 'web1-app', '--json')).stdout);
      expect(json.pairs[0]).toMatchObject({ credential: 'alternating', login: 'web1_app_a' });
      expect(json.holders[0].receives[0].path).toBe('/var/lib/baton/mesh/provides/pg-main/web1_app+a');

      const first = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10');
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('window pg-main:web1-app: none (alternating)');
      expect(first.stdout).toContain('switched to alternating');
      const a = read('db1', 'provides/pg-main/web1_app+a');
      expect(read('web1', CONSUMER)).toBe(`user=web1_app_a password='${a}'`);
      expect(statSync(live('web1', CONSUMER)).mode & 0o777).toBe(0o600);
      expect(existsSync(live('db1', 'provides/pg-main/web1_app'))).toBe(false);
      expect(existsSync(live('db1', 'provides/pg-main/.applied/web1_app'))).toBe(false);
      expect(parseReceipt(read('db1', 'provides/pg-main/.applied/web1_app+a'))?.digest).toBe(secretDigest(a));

      const second = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10');
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('web1-app moves from web1_app_a to web1_app_b');
      expect(read('db1', 'provides/pg-main/web1_app+a')).toBe(a);
      expect(conninfoLogin(read('web1', CONSUMER))).toBe('web1_app_b');
      expect(parseConninfo(read('web1', CONSUMER))?.password).toBe(
        read('db1', 'provides/pg-main/web1_app+b'),
      );

      // And back to one role.
      setCredential('single');
      const back = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10');
      expect(back.code).toBe(0);
      expect(back.stdout).toContain('switched to single');
      expect(read('web1', CONSUMER)).toBe(read('db1', 'provides/pg-main/web1_app'));
      for (const gone of ['web1_app+a', 'web1_app+b', '.applied/web1_app+a', '.applied/web1_app+b'])
        expect(existsSync(live('db1', `provides/pg-main/${gone}`))).toBe(false);

      const journal = readFileSync(path.join(tmp.dir, 'state', JOURNAL_FILE), 'utf8');
      for (const secret of [a, read('db1', 'provides/pg-main/web1_app'), 'first-password'])
        expect(journal).not.toContain(secret);
      for (const out of [first.stdout, second.stdout, back.stdout]) expect(out).not.toContain(a);
    } finally {
      provisioner.stop();
    }
  });

  it('a provisioner that does not confirm: rolled back (exit 3), the consumer stays on its live login, whose file is unchanged', async () => {
    setCredential('alternating');
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    const first = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10').finally(
      () => provisioner.stop(),
    );
    expect(first.code).toBe(0);
    const consumer = read('web1', CONSUMER);
    const a = read('db1', 'provides/pg-main/web1_app+a');
    const stalled = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '0.3');
    expect(stalled.code).toBe(3);
    expect(stalled.stdout).toContain('web1-app stayed on its live login web1_app_a, which works');
    expect(read('web1', CONSUMER)).toBe(consumer);
    expect(read('db1', 'provides/pg-main/web1_app+a')).toBe(a);
    expect(existsSync(live('db1', 'provides/pg-main/web1_app+b'))).toBe(false);
  });
  it('baton SIGKILLed between the commits of a --revoke-previous rotation: mesh resume moves the consumer and then revokes the login it left', async () => {
    setCredential('alternating');
    let provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    for (let i = 0; i < 2; i++)
      expect((await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10')).code).toBe(0);
    provisioner.stop();
    expect(conninfoLogin(read('web1', CONSUMER))).toBe('web1_app_b');
    const before = {
      a: read('db1', 'provides/pg-main/web1_app+a'),
      b: read('db1', 'provides/pg-main/web1_app+b'),
      consumer: read('web1', CONSUMER),
    };

    // No provisioner: the rotation commits the provider end of a and waits for its receipt; killed there.
    const child = spawn(
      process.execPath,
      [
        BIN,
        '--state-dir',
        path.join(tmp.dir, 'state'),
        'mesh',
        'rotate',
        '--consumer',
        'web1-app',
        '--yes',
        '--wait',
        '60',
        '--revoke-previous',
        '--inventory',
        inventory,
      ],
      {
        cwd: tmp.dir,
        env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const deadline = Date.now() + 20_000;
    while (read('db1', 'provides/pg-main/web1_app+a') === before.a) {
      if (Date.now() > deadline) throw new Error('the provider end of web1_app_a was never committed');
      await new Promise((r) => setTimeout(r, 10));
    }
    child.kill('SIGKILL');
    await exited;
    // Dead between the commits: the consumer is still on b, which works; nothing was revoked.
    expect(read('web1', CONSUMER)).toBe(before.consumer);
    expect(read('db1', 'provides/pg-main/web1_app+b')).toBe(before.b);

    const journal = () =>
      readFileSync(path.join(tmp.dir, 'state', JOURNAL_FILE), 'utf8')
        .trim()
        .split('\n')
        .map(
          (l) =>
            JSON.parse(l) as {
              id: string;
              phase: string;
              revoke_previous?: unknown;
              pairs: { revoked?: boolean }[];
            },
        );
    const id = journal().at(-1)!.id;
    expect(journal().at(-1)!.revoke_previous).toEqual({ end_sessions: false });

    provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const resumed = await baton('mesh', 'resume', id, '--wait', '10');
      expect(resumed.stderr).toBe('');
      expect(resumed.stdout).toContain('moved to it (no window)');
      expect(resumed.stdout).toContain('revoked web1_app_b (pg-main:web1-app)');
      expect(resumed.code).toBe(0);
      expect(conninfoLogin(read('web1', CONSUMER))).toBe('web1_app_a');
      const revoked = read('db1', 'provides/pg-main/web1_app+b');
      expect(revoked).not.toBe(before.b);
      expect(readFileSync(live('web1', CONSUMER), 'utf8')).not.toContain(revoked);
      expect(resumed.stdout).not.toContain(revoked);
      expect(
        journal()
          .filter((r) => r.id === id)
          .some((r) => r.pairs.some((p) => p.revoked === true)),
      ).toBe(true);
    } finally {
      provisioner.stop();
    }
  });
  it('baton killed after the consumer commit, before the journal said applied: mesh status and mesh rotate agree the pair is finished', async () => {
    setCredential('alternating');
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      for (let i = 0; i < 2; i++)
        expect((await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10')).code).toBe(
          0,
        );
      // What a kill right after the consumer's rename leaves: the journal ends at "committed".
      const journalFile = path.join(tmp.dir, 'state', JOURNAL_FILE);
      const lines = readFileSync(journalFile, 'utf8').trim().split('\n');
      expect(JSON.parse(lines.at(-1)!).phase).toBe('applied');
      writeFileSync(journalFile, `${lines.slice(0, -1).join('\n')}\n`);
      const status = await baton('mesh', 'status', '--consumer', 'web1-app');
      expect(status.code, status.stdout).toBe(0);
      const next = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--yes', '--wait', '10');
      expect(next.stderr).toBe('');
      expect(next.code).toBe(0);
      expect(conninfoLogin(read('web1', CONSUMER))).toBe('web1_app_a');
    } finally {
      provisioner.stop();
    }
  });
});
