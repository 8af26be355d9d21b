/**
 * The drill as CI runs it: the BUILT CLI, no terminal, a real sandbox (s3rver, PostgreSQL,
 * the provisioner, four local machines). Each child gets a private TMPDIR, so "nothing left
 * behind" is checked where the drill would leave it.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { assertBuilt, runBaton, startBaton } from '../helpers/run-baton.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { leftoversIn, processesMentioning } from '../drill/leftovers.js';
import { scanForSecrets } from '../helpers/secret-scan.js';

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A TMPDIR of its own, traversable like /tmp: PostgreSQL runs as `postgres` and must reach its data dir. */
function privateTmp(): string {
  const { dir, cleanup } = makeTempDir('baton-drill-test-');
  chmodSync(dir, 0o755);
  cleanups.push(cleanup);
  return dir;
}

/** Every file below `dir`, for reading back what the mesh delivered. */
function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const abs = path.join(dir, name);
    if (statSync(abs).isDirectory()) out.push(...filesBelow(abs));
    else out.push(abs);
  }
  return out;
}

async function expectNothingLeft(tmp: string, except: readonly string[] = []): Promise<void> {
  await vi.waitFor(() => expect(processesMentioning(tmp)).toEqual([]), { timeout: 15_000, interval: 100 });
  expect(leftoversIn(tmp).filter((name) => !except.includes(name))).toEqual([]);
}

beforeAll(() => assertBuilt());

describe('baton drill --plain (the built CLI)', () => {
  it('performs all five steps end to end, every check passes, exits 0, shows no secret and keeps only what --keep asked for', async () => {
    const tmp = privateTmp();
    const result = await runBaton(['drill', '--plain', '--keep'], {
      env: { TMPDIR: tmp },
      timeoutMs: 170_000,
    });
    expect(result.all).toContain('✓ every check passed');
    expect(result.exitCode).toBe(0);
    for (let step = 1; step <= 5; step += 1) expect(result.stdout).toContain(`Step ${step} of 5:`);
    // The store check a real night needs is run, and what the drill does about its answer is said.
    expect(result.all).toContain(
      's3rver does NOT enforce conditional writes: the drill publishes anyway, one controller at a time',
    );
    expect(result.all).not.toContain('not checked: run');
    // The checks that carry the lessons, by name.
    for (const check of [
      '✓ ctl-b holds nothing (a fresh host)',
      '✓ ctl-b adopted the published authority (fingerprints equal)',
      '✓ ctl-a was REFUSED: left behind by a rotation',
      '✓ the old authority was set aside, not deleted (ca.superseded-*)',
      '✓ the preview lists exactly db1 and web1',
      '✓ the old password of web1_app is refused',
      '✓ the rotation was tried and the gate closed, naming worker1',
      '✓ nothing was sent: every file on every machine is as it was',
      '✓ the old password of worker1_jobs still logs in',
      '✓ worker1_jobs logs in with the new password',
      // web2-app's caching app, restarted by its reload: after each move, never refused.
      "✓ web2-app's reload: ran on web2 once its file changed, and exited 0",
      "✓ web2-app's app had 0 failed logins through the rotation (alternating: no window)",
      "✓ web2-app's app kept logging in, not restarted: nothing was sent to it",
    ]) {
      expect(result.stdout).toContain(check);
    }
    // A check line is indented four spaces; ✗ deeper in is the views' own words (a refusal, a closed gate).
    expect(result.stdout).not.toMatch(/^ {4}✗/m);
    expect(result.stdout).toMatch(/checks: \d+ passed, 0 failed/);
    expect(result.stdout).toContain('typed a wrong prefix "00000000": the gate stays shut, nothing written');
    // The reload's outcome in the rotation's own summary, and in mesh status after it.
    expect(result.stdout).toMatch(/✓ reload of web2-app on web2: exit 0 after \d+\.\d s/);
    expect(result.stdout).toMatch(/app: reloaded at \S+ \(exit 0\)/);
    expect(result.stdout).toMatch(
      /✓ web2-app's app, restarted by its reload:, logs in as web2_app_[ab] with the new password — (\d+) of \1 logins since the restart accepted/,
    );

    const kept = /the sandbox is kept in (\S+)/.exec(result.stdout)?.[1];
    expect(kept).toBeDefined();
    cleanups.push(() => rmSync(kept!, { recursive: true, force: true }));
    expect(path.dirname(kept!)).toBe(tmp);
    // Every password the mesh delivered is in the kept sandbox; none may be in the output or a log.
    const delivered = filesBelow(path.join(kept!, 'machines')).filter((file) =>
      /\/(provides|consumes)\/pg-main\/[a-z0-9_]+(\+[ab])?$/.test(file),
    );
    // web2-app is alternating: its logins' files (web2_app+a, +b) hold its passwords.
    expect(delivered.length).toBeGreaterThanOrEqual(8);
    expect(delivered.filter((file) => /\/provides\/pg-main\/web2_app\+[ab]$/.test(file))).toHaveLength(2);
    const logs = ['provisioner.log', 'journal/mesh-journal.jsonl', 'machines/web2/var/log/web2-app.log'].map(
      (name) => readFileSync(path.join(kept!, name), 'utf8'),
    );
    expect(logs[0]).toContain('web1_app sha256:');
    for (const file of delivered) {
      const secret = readFileSync(file, 'utf8');
      expect(secret.length).toBeGreaterThanOrEqual(32);
      expect(result.all).not.toContain(secret);
      for (const log of logs) expect(log).not.toContain(secret);
    }
    await expectNothingLeft(tmp, [path.basename(kept!)]);
  }, 180_000);

  it('--step 4 prepares steps 1–3 by script, checks them, then practises step 4 alone, showing web1-app pending then applied and no secret', async () => {
    const tmp = privateTmp();
    const result = await runBaton(['drill', '--plain', '--step', '4', '--keep'], {
      env: { TMPDIR: tmp },
      timeoutMs: 170_000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Preparing the sandbox for step 4');
    expect(result.stdout).not.toContain('Step 3 of 5:');
    expect(result.stdout).toContain('Step 4 of 5:');
    expect(result.stdout).not.toContain('Step 5 of 5:');
    expect(result.stdout).toMatch(/step 4 .*✓ rotate web1-app: a window; alternating web2-app: none/);
    // The same rotation twice, one after the other: a measured window, then none.
    expect(result.stdout).toMatch(
      /✓ web1-app's window was measured: \d+ ms when new connections with the OLD password could fail/,
    );
    expect(result.stdout).toMatch(
      /✓ web2-app had no window: it moved from web2_app_[ab] to web2_app_[ab], and web2_app_[ab] kept its password/,
    );
    expect(result.stdout).toMatch(
      /✓ the login web2 left, web2_app_[ab], still logs in with its password \(no window\)/,
    );

    // mesh status before, while the provisioner is held (pending by construction), and after.
    const step4 = result.stdout.slice(
      result.stdout.indexOf('Step 4 of 5:'),
      result.stdout.indexOf('\nSummary'),
    );
    const pair = 'pg-main:web1-app (role web1_app, db1 → web1)';
    const reading = (when: string) => {
      const at = step4.indexOf(`$ baton mesh status --consumer web1-app   (${when}`);
      expect(at, `no mesh status reading "${when}" in step 4`).toBeGreaterThanOrEqual(0);
      const end = step4.indexOf('\n    $ ', at + 1);
      return step4.slice(at, end < 0 ? undefined : end);
    };
    expect(reading('before')).toMatch(new RegExp(`✓ applied +${escape(pair)}`));
    const midway = reading('read right after the commit');
    expect(midway).toMatch(new RegExp(`pending +${escape(pair)}`));
    expect(midway).toContain('1 pair: 1 pending.');
    expect(reading('after')).toMatch(new RegExp(`✓ applied +${escape(pair)}`));
    expect(step4.indexOf('(before)')).toBeLessThan(step4.indexOf('(read right after the commit'));
    expect(step4.indexOf('(read right after the commit')).toBeLessThan(step4.indexOf('(after)'));
    // Printed where it was read, before the rotation's summary: never a stale reading after it.
    const summaryAt = step4.indexOf('Rotated 1 credential');
    expect(summaryAt).toBeGreaterThan(0);
    expect(step4.indexOf('(read right after the commit')).toBeLessThan(summaryAt);

    const kept = /the sandbox is kept in (\S+)/.exec(result.stdout)?.[1];
    expect(kept).toBeDefined();
    cleanups.push(() => rmSync(kept!, { recursive: true, force: true }));
    const delivered = filesBelow(path.join(kept!, 'machines')).filter((file) =>
      /\/(provides|consumes)\/pg-main\/[a-z0-9_]+(\+[ab])?$/.test(file),
    );
    expect(delivered.some((file) => file.endsWith('/consumes/pg-main/web1_app'))).toBe(true);
    const secrets = delivered.map((file) => ({
      name: path.relative(kept!, file),
      value: readFileSync(file, 'utf8'),
    }));
    expect(scanForSecrets([{ name: 'drill --plain --step 4 output', data: result.all }], secrets)).toEqual(
      [],
    );
    await expectNothingLeft(tmp, [path.basename(kept!)]);
  }, 180_000);

  it('without a terminal it says so and walks through plainly; SIGTERM then stops PostgreSQL and removes the sandbox', async () => {
    const tmp = privateTmp();
    const child = startBaton(['drill'], { env: { TMPDIR: tmp }, timeoutMs: 120_000 });
    let seen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
    });
    // PostgreSQL and the provisioner are running once the first passwords are being given.
    await vi.waitFor(() => expect(seen).toContain('giving every pair of pg-main its first password'), {
      timeout: 60_000,
      interval: 50,
    });
    expect(seen).toContain('no terminal here, so running the plain walk-through (--plain)');
    expect(processesMentioning(tmp).length).toBeGreaterThan(0);
    child.kill('SIGTERM');
    const result = await child;
    expect(result.exitCode).toBe(143);
    await expectNothingLeft(tmp);
  }, 120_000);

  it('a PostgreSQL that cannot start is reported with why and what to do, exit 1, and nothing is left behind', async () => {
    // A TMPDIR only root can enter: the server, running as `postgres`, cannot reach its files.
    const { dir: tmp, cleanup } = makeTempDir('baton-drill-test-');
    cleanups.push(cleanup);
    const result = await runBaton(['drill', '--plain'], { env: { TMPDIR: tmp }, timeoutMs: 120_000 });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain('starting PostgreSQL');
    expect(result.stdout).toContain("The drill's PostgreSQL could not start");
    // Which part fails first depends on where the project lives (the binaries may need copying too).
    expect(result.stdout).toMatch(/Permission denied|not traversable/);
    expect(result.stdout).toContain('make $TMPDIR (and the directories above it) traversable');
    expect(result.stdout).toContain('The sandbox was removed.');
    await expectNothingLeft(tmp);
  }, 120_000);

  it('--list prints the five steps, one line each, and starts nothing', async () => {
    const tmp = privateTmp();
    const result = await runBaton(['drill', '--list'], { env: { TMPDIR: tmp } });
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[2]).toMatch(/^3\. .*REFUSED/);
    expect(leftoversIn(tmp)).toEqual([]);
  });

  it('--step 9 is refused as a usage error that names the valid steps, and nothing is started', async () => {
    const tmp = privateTmp();
    const result = await runBaton(['drill', '--step', '9'], { env: { TMPDIR: tmp } });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--step "9" is not a step of the drill.');
    expect(result.stderr).toContain('from 1 to 5');
    expect(result.stderr).toContain('Nothing was started.');
    expect(existsSync(tmp) && leftoversIn(tmp)).toEqual([]);
  });
});
