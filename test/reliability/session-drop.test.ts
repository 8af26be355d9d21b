/**
 * The operator's session goes while a rotation waits for a provisioner that is stopped: the
 * tmux it runs in is killed, the `ssh -tt` session it runs over is dropped, or Ctrl-C comes
 * twice. The BUILT CLI, Debian's PostgreSQL 15, the real provisioner (`baton provision
 * postgres --watch`) and an app that re-reads its consumer file for every connection.
 *
 * Before, the first write to the hung-up terminal raised EIO, Node aborted ("Assertion failed
 * … ResetStdio"), the journal stayed at `committed` and the provider end held the new password:
 * once the provisioner came back the consumer was refused until someone ran `mesh resume`.
 * Now the rotation rolls back by itself: after the provisioner starts, the consumer logs in,
 * no staged file is left and the journal says `rolled-back`. Run `npm run build` first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { ifSet } from '../helpers/if-set.js';
import { startPasswordApp } from '../helpers/password-app.js';
import { canLogin, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { BIN } from '../helpers/run-baton.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { batonOverSsh, shellQuote, TmuxSession } from '../helpers/tmux.js';

const PROVIDER = 'pg-main';
const missing = debianPostgresMissing() ?? sshdUnavailable();

describeWithPart(missing, "the operator's session drops while a rotation waits (Debian's PostgreSQL)", () => {
  const suite = usePostgresMesh({ server: 'debian', prefix: 'baton-session-drop-', batonTimeoutMs: 90_000 });
  let sshd: Sshd;
  let session: TmuxSession | undefined;
  const children: ChildProcess[] = [];
  const figures = { cases: 0, stranded: 0, stagedLeft: 0, appFailures: 0 };

  const consumerFile = (m: string, role: string) => suite.mesh.consumerFile(m, role);
  const stateDir = () => suite.mesh.stateDir;
  const inventory = () => suite.mesh.inventory;
  const baton = (...args: string[]) => suite.mesh.baton(...args);

  /** The real provisioner, as its unit runs it (cycling every 250 ms); stopped with SIGTERM. */
  const startProvisioner = () => suite.mesh.startProvisioner(0.25);

  /** The rotation the operator runs: one pair, waiting long for its receipt. */
  const rotateArgs = (...extra: string[]) => [
    '--state-dir',
    stateDir(),
    'mesh',
    'rotate',
    '--pair',
    `${PROVIDER}:web1-app`,
    '--inventory',
    inventory(),
    '--wait',
    '120',
    ...extra,
  ];
  const local = (args: string[]) => [process.execPath, BIN, ...args].map(shellQuote).join(' ');

  /** Node processes (the CLI) still running with this test's state dir in their argv. */
  function batonsRunning(): string[] {
    const out: string[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').join(' ');
        if (argv.startsWith('node ') || argv.startsWith(process.execPath))
          if (argv.includes(stateDir()) && argv.includes('rotate')) out.push(`${entry}: ${argv}`);
      } catch {
        // exited meanwhile
      }
    }
    return out;
  }

  const sshClients = () =>
    readdirSync('/proc').filter((entry) => {
      try {
        const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').join(' ');
        return /^\d+$/.test(entry) && argv.startsWith('ssh ') && argv.includes(stateDir());
      } catch {
        return false;
      }
    });

  const stagedFiles = () =>
    (readdirSync(path.join(suite.mesh.dir, 'machines'), { recursive: true }) as string[]).filter((f) =>
      f.endsWith('.next'),
    );

  const lastPhase = () => {
    const records = readFileSync(path.join(stateDir(), JOURNAL_FILE), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; phase: string });
    const id = records[records.length - 1]!.id;
    return { id, phase: records.filter((r) => r.id === id).pop()!.phase };
  };

  /**
   * What the acceptance asks after the session went: baton is gone by itself, its journal
   * says the rotation was rolled back, nothing is staged; once the provisioner is started
   * the consumer (an app re-reading its file) logs in with the password it had.
   */
  async function nothingStranded(old: string): Promise<void> {
    await vi.waitFor(
      () => {
        const left = batonsRunning();
        if (left.length > 0) throw new Error(`baton still running: ${left.join('; ')}`);
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(lastPhase().phase).toBe('rolled-back');
    const staged = stagedFiles();
    figures.stagedLeft += staged.length;
    expect(staged).toEqual([]);
    expect(readFileSync(consumerFile('web1', 'web1_app'), 'utf8')).toBe(old);
    const provisioner = startProvisioner();
    const app = startPasswordApp(suite.sandbox, () => consumerFile('web1', 'web1_app'), 'web1_app');
    try {
      // Three provisioner cycles (its heartbeats say so): it has applied whatever the provider end says.
      await suite.mesh.cyclesOf(provisioner, 3);
      await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(3), {
        timeout: 10_000,
      });
    } finally {
      await app.stop();
      await provisioner.stop();
    }
    figures.appFailures += app.failures().length;
    expect(app.failures()).toEqual([]);
    const logsIn = await canLogin(
      suite.sandbox,
      'web1_app',
      readFileSync(consumerFile('web1', 'web1_app'), 'utf8'),
    );
    if (!logsIn) figures.stranded += 1;
    expect(logsIn).toBe(true);
    figures.cases += 1;
  }

  beforeAll(async () => {
    sshd = await startSshd();
  }, 120_000);

  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    // The sandbox is destroyed by usePostgresMesh's own afterAll, even if this stop fails.
    await ifSet(sshd)
      ?.stop()
      .catch(() => undefined);
    console.log(`session-drop figures: ${JSON.stringify(figures)}`);
  });

  beforeEach(async () => {
    // A first rotation with the provisioner running creates web1_app; then it is stopped.
    const provisioner = startProvisioner();
    const r = await baton(
      'mesh',
      'rotate',
      '--pair',
      `${PROVIDER}:web1-app`,
      '--inventory',
      inventory(),
      '--yes',
    );
    await provisioner.stop();
    expect(r.exitCode, r.all).toBe(0);
  }, 60_000);

  afterEach(async () => {
    await session?.kill();
    session = undefined;
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('tmux killed while `mesh rotate --yes` waits for the stopped provisioner: rolled back, the consumer logs in', async () => {
    const old = readFileSync(consumerFile('web1', 'web1_app'), 'utf8');
    session = await TmuxSession.start({
      command: local(rotateArgs('--yes')),
      cwd: suite.mesh.dir,
      env: { NO_COLOR: '1' },
    });
    await session.waitFor('committed 1/1 provider ends', 'the wait for the receipt');
    expect(stagedFiles()).toHaveLength(1); // the consumer end waits, staged
    await session.kill();
    session = undefined;
    await nothingStranded(old);
  }, 90_000);

  it('tmux killed while the rotation view waits: the view goes, the rotation rolls back, the consumer logs in', async () => {
    const old = readFileSync(consumerFile('web1', 'web1_app'), 'utf8');
    session = await TmuxSession.start({
      command: local(rotateArgs()),
      cwd: suite.mesh.dir,
      env: { NO_COLOR: '1' },
    });
    await session.waitFor('Type 1 (the number of credentials)', 'the confirm prompt');
    await session.type('1');
    await session.waitFor('(Enter rotates)', 'the typed count');
    await session.keys('Enter');
    await vi.waitFor(() => expect(lastPhase().phase).toBe('committed'), { timeout: 20_000, interval: 50 });
    await session.kill();
    session = undefined;
    await nothingStranded(old);
  }, 90_000);

  it('the `ssh -tt` session dropped while the rotation waits: the remote baton rolls back, the consumer logs in', async () => {
    const old = readFileSync(consumerFile('web1', 'web1_app'), 'utf8');
    session = await TmuxSession.start({
      command: batonOverSsh(sshd, rotateArgs('--yes')),
      cwd: suite.mesh.dir,
    });
    await session.waitFor('committed 1/1 provider ends', 'the wait for the receipt');
    const clients = sshClients();
    expect(clients).toHaveLength(1);
    process.kill(Number(clients[0]), 'SIGKILL'); // the operator's link dies
    await nothingStranded(old);
  }, 90_000);

  it('SIGINT twice during the wait: the second never cuts the roll-back short; rolled back fully', async () => {
    const old = readFileSync(consumerFile('web1', 'web1_app'), 'utf8');
    // A script's baton (no terminal): the pane's shell would itself die of a Ctrl-C and hang the pty up.
    const child = spawn(process.execPath, [BIN, ...rotateArgs('--yes')], {
      cwd: suite.mesh.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    children.push(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await vi.waitFor(() => expect(out).toContain('committed 1/1 provider ends'), {
      timeout: 20_000,
      interval: 20,
    });
    child.kill('SIGINT');
    await vi.waitFor(
      () => expect(out).toContain('rolling back 1 unfinished pair(s) (interrupted by SIGINT)'),
      {
        timeout: 20_000,
        interval: 5,
      },
    );
    child.kill('SIGINT'); // mid-roll-back: it waits for the old receipt of a stopped provisioner
    const code = await exited;
    expect(out).toContain('SIGINT again: still taking back what did not finish');
    expect(out).toMatch(/rolled back/i);
    expect(code).not.toBeNull(); // ended by itself, not by the signal
    expect(code, out).toBe(3); // taken back: the operator rotates again
    await nothingStranded(old);
  }, 90_000);
});
