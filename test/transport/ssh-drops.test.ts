/**
 * The built CLI rotating one pair over a real sshd (db1 and web1 on two ports of it, each with
 * its own mesh_dir, every connection through the delay relay) when something drops right after
 * the provider commit, with no provisioner answering: the operator's session (SIGHUP), or the
 * link to the provider machine (its relay killed). Run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, vi } from 'vitest';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import {
  intentPhases,
  makeTempDir,
  snapshotDir,
  withoutRolledBack,
  withoutRotationRecords,
} from '../helpers/fs-snapshot.js';
import { describeWithPart, itWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { DELAY_RELAY, delayedSshConfig, sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { writeSshPair } from '../mesh/mesh-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
const PAIR = `${PROVIDER}:web1-app`;
const unavailable = sshdUnavailable();

/** Command lines of every process on this host, by pid (a process gone meanwhile is skipped). */
function commandLines(): Map<number, string> {
  const lines = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim());
    } catch {
      // gone
    }
  }
  return lines;
}

const holding = (needle: string) =>
  [...commandLines()].filter(([, line]) => line.includes(needle)).map(([pid, line]) => `${pid}: ${line}`);

describeWithPart(
  unavailable,
  'a rotation over ssh when the session or the link drops after the provider commit',
  () => {
    let sshd: Sshd;
    let tmp: { dir: string; cleanup: () => void };
    beforeAll(async () => {
      assertBuilt();
      sshd = await startSshd({ extraPorts: 1 });
    }, 60_000);
    afterAll(async () => {
      await ifSet(sshd)?.stop();
    });
    const afterRun: (() => void)[] = [];
    beforeEach(() => {
      tmp = makeTempDir('baton-drop-');
      return () => {
        tmp.cleanup();
        for (const clean of afterRun.splice(0)) clean();
      };
    });

    const meshOf = (m: string) => path.join(tmp.dir, m, 'mesh');
    const portOf = (m: string) => (m === 'db1' ? sshd.ports[0]! : sshd.ports[1]!);
    const state = () => path.join(tmp.dir, 'state');
    const sshConfig = () => delayedSshConfig(tmp.dir, 5, path.join(tmp.dir, 'relay.log'));
    /** A mesh whose pair already holds one password at both ends, as a seeded pair does. */
    function writeMesh(): string {
      const inventory = writeSshPair(tmp.dir, sshd, { config: sshConfig(), portOf });
      for (const file of [
        path.join(meshOf('db1'), 'provides', PROVIDER, 'web1_app'),
        path.join(meshOf('web1'), 'consumes', PROVIDER, 'web1_app'),
      ]) {
        mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
        writeFileSync(file, 'old-web1-password', { mode: 0o600 });
      }
      return inventory;
    }
    const journal = () =>
      existsSync(path.join(state(), JOURNAL_FILE))
        ? readFileSync(path.join(state(), JOURNAL_FILE), 'utf8')
            .trim()
            .split('\n')
            .map(
              (l) =>
                JSON.parse(l) as {
                  id: string;
                  phase: string;
                  rolled_back?: { pair: string; result: string; receipt?: string }[];
                },
            )
        : [];
    /** `mesh rotate --yes --wait S` with nobody answering, started with its own TMPDIR; resolves once the journal shows the commit. */
    async function rotateUntilCommitted(inventory: string, tmpdir: string, waitSeconds: number) {
      mkdirSync(tmpdir, { mode: 0o700 });
      const child = spawn(
        process.execPath,
        [
          BIN,
          '--state-dir',
          state(),
          'mesh',
          'rotate',
          '--pair',
          PAIR,
          '--inventory',
          inventory,
          '--yes',
          '--wait',
          String(waitSeconds),
        ],
        {
          cwd: tmp.dir,
          env: {
            ...process.env,
            NO_COLOR: '1',
            BATON_CONFIG: '',
            CI: '',
            TMPDIR: tmpdir,
            XDG_CONFIG_HOME: '/nonexistent-baton-test-config',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      await vi.waitFor(() => expect(journal().map((r) => r.phase)).toContain('committed'), {
        timeout: 20_000,
        interval: 20,
      });
      return { child, exited, output: () => ({ stdout, stderr }) };
    }

    itWithPart(
      unavailable,
      'SIGHUP right after the provider commit rolls the pair back (exit 3) and leaves no ssh process, no relay and no socket directory; the journal and mesh status say so',
      async () => {
        const inventory = writeMesh();
        // Short, as an operator's TMPDIR is: under the suite's longer per-run directory baton would
        // put its sockets in /tmp instead (a unix socket path is at most 108 bytes).
        const tmpdir = `/tmp/bd-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
        afterRun.push(() => rmSync(tmpdir, { recursive: true, force: true }));
        const status = () =>
          runBaton(['--state-dir', state(), 'mesh', 'status', '--inventory', inventory], {
            cwd: tmp.dir,
            env: { NO_COLOR: '1' },
          });
        // No provisioner has ever answered: before the rotation the pair is pending (exit 3).
        const statusBefore = await status();
        expect(statusBefore.exitCode, statusBefore.all).toBe(3);
        const before = { db1: snapshotDir(meshOf('db1')), web1: snapshotDir(meshOf('web1')) };
        const run = await rotateUntilCommitted(inventory, tmpdir, 30);
        const sockets = readdirSync(tmpdir)
          .filter((n) => n.startsWith('baton-ssh-'))
          .map((n) => path.join(tmpdir, n));
        expect(sockets).toHaveLength(1);
        // The masters are renamed "ssh: <socket> [mux]"; both machines have one by now.
        expect(holding(sockets[0]!).length).toBeGreaterThanOrEqual(2);
        run.child.kill('SIGHUP');
        const code = await run.exited;
        const { stdout, stderr } = run.output();
        expect(stderr).toBe('');
        expect(code, stdout).toBe(3);
        const id = /Rotation (\S+):/.exec(stdout)?.[1] ?? '';
        expect(stdout).toContain(`Rotation ${id} rolled back (interrupted by SIGHUP): 0 of 1 credential`);
        expect(stdout).not.toContain('still works');
        expect(stdout.trim().split('\n').at(-1)).toMatch(/^Nothing is left to do/);
        expect(holding(sockets[0]!)).toEqual([]);
        expect(readdirSync(tmpdir).filter((n) => n.startsWith('baton-ssh-'))).toEqual([]);
        // Each relay ends with the master it carried.
        await vi.waitFor(
          () =>
            expect(
              holding(`${DELAY_RELAY} 127.0.0.1 ${portOf('db1')}`).concat(
                holding(`${DELAY_RELAY} 127.0.0.1 ${portOf('web1')}`),
              ),
            ).toEqual([]),
          { timeout: 2_000 },
        );
        const last = journal()
          .filter((r) => r.id === id)
          .at(-1)!;
        expect(last.phase).toBe('rolled-back');
        expect(last.rolled_back?.map((p) => [p.pair, p.result])).toEqual([[PAIR, 'rolled-back']]);
        // Both ends hold what they held before the rotation: nothing staged, nothing kept.
        expect({
          db1: withoutRotationRecords(withoutRolledBack(snapshotDir(meshOf('db1')))),
          web1: withoutRotationRecords(snapshotDir(meshOf('web1'))),
        }).toEqual(before);
        // Over ssh too, the provider keeps the rotation's last word: taken back.
        expect(Object.values(intentPhases(meshOf('db1')))).toEqual(['rolled-back']);
        // After the roll-back the pair is described as before it, plus the rotation that was taken back.
        const after = await status();
        expect(after.exitCode, after.all).toBe(3);
        const described = (text: string) =>
          text.split('\n').filter((l) => !l.includes(`(role web1_app, db1 → web1)`));
        expect(described(after.stdout)).toEqual(described(statusBefore.stdout));
        expect(after.stdout).toContain(`${PAIR} (role web1_app, db1 → web1)`);
        expect(after.stdout).toContain(`last rotation ${id} rolled-back`);
      },
      60_000,
    );

    itWithPart(
      unavailable,
      'the link to the provider cut right after its commit: the output says the database may have the new password, never that the old one still works, and ends with what to run',
      async () => {
        const inventory = writeMesh();
        // The receipt wait outlasts a dropped link (it may come back); a short one ends it here.
        const run = await rotateUntilCommitted(inventory, path.join(tmp.dir, 't'), 2);
        // The link stays down: a new connection to db1's port is refused (ssh takes the first
        // ProxyCommand and HostName that match: none, and an address nothing listens on), and the
        // relay carrying db1's live connection is killed. Refused, as a down link is, rather than
        // closed before sshd's banner: that is how sshd's MaxStartups drops a connection, which
        // baton retries for each operation's whole --timeout (ssh-start-limits.ts), and the
        // roll-back would wait that out twice before saying the same words.
        const config = sshConfig();
        writeFileSync(
          config,
          `Match exec "test %p = ${portOf('db1')}"\n  ProxyCommand none\n  HostName 127.0.0.2\n${readFileSync(config, 'utf8')}`,
        );
        const relays = holding(`${DELAY_RELAY} 127.0.0.1 ${portOf('db1')}`).map((line) =>
          Number(line.split(':')[0]),
        );
        expect(relays.length).toBeGreaterThanOrEqual(1);
        for (const pid of relays) process.kill(pid, 'SIGKILL');
        const code = await run.exited;
        const { stdout, stderr } = run.output();
        expect(stderr).toBe('');
        expect(code, stdout).toBe(3);
        const id = /Rotation (\S+):/.exec(stdout)?.[1] ?? '';
        expect(id).not.toBe('');
        expect(stdout).not.toMatch(/old password still works/);
        expect(stdout).toContain(`whether ${PROVIDER} took the new password is unknown`);
        expect(stdout).toContain(
          `new connections of web1-app (file still old, new one staged) fail until this is finished or rolled back`,
        );
        expect(
          journal()
            .filter((r) => r.id === id)
            .at(-1)
            ?.rolled_back?.map((p) => [p.pair, p.result]),
        ).toEqual([[PAIR, 'provider-unknown']]);
        expect(stdout.trim().split('\n').at(-1)).toMatch(
          new RegExp(`mesh resume ${id}\\b.*mesh rollback ${id}\\b`),
        );
      },
      60_000,
    );
  },
);
