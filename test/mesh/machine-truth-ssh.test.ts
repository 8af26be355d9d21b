/**
 * A rotation's truth on the machines, over the transport operators use: a real sshd on
 * 127.0.0.1 (each machine its own mesh_dir), Debian's PostgreSQL 15 and the real provisioner
 * (`baton provision postgres --watch`), the BUILT CLI. The provider lock is the flock a remote
 * shell holds on the shared connection (docs/mesh-rotation.md, "The provider lock"): two state
 * dirs racing one pair meet there; a rotation SIGKILLed between its commits is found on the
 * machines and finished by following `mesh status --json` as printed. The provisioner is paused
 * (SIGSTOP) where a rotation must wait for it, so every race is decided by the lock, never by
 * timing. The tests share one database and one mesh and run in order. Run `npm run build` first.
 */
import { provisionerArgv } from '../helpers/postgres-mesh.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { REPO } from '../helpers/bundle-script.js';
import { makeTempDir, rotationRecords, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { asSuperuser, canLogin, DEBIAN_POSTGRES_BIN, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, runBaton, startBaton, type BatonRun } from '../helpers/run-baton.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { writeSshPair } from './mesh-fixture.js';

const PROVIDER = 'pg-main';
const PAIR = `${PROVIDER}:web1-app`;
const missing = debianPostgresMissing() ?? sshdUnavailable();

describeWithPart(
  missing,
  "a rotation's truth on the machines, over a real sshd (Debian's PostgreSQL)",
  () => {
    let sandbox: PostgresSandbox;
    let sshd: Sshd;
    let tmp: { dir: string; cleanup: () => void };
    let inventory: string;
    let provisioner: ChildProcess | undefined;
    const children: ChildProcess[] = [];

    const meshDirOn = (m: string) => path.join(tmp.dir, m, 'mesh');
    const providerDir = () => path.join(meshDirOn('db1'), 'provides', PROVIDER);
    const consumerEnd = () => path.join(meshDirOn('web1'), 'consumes', PROVIDER, 'web1_app');
    const stateDir = (name = 'state') => path.join(tmp.dir, name);
    const machines = () => ({ db1: snapshotDir(meshDirOn('db1')), web1: snapshotDir(meshDirOn('web1')) });
    const staged = () =>
      ['db1', 'web1'].flatMap((m) =>
        (readdirSync(meshDirOn(m), { recursive: true }) as string[]).filter((f) => f.endsWith('.next')),
      );

    const batonWords = (words: readonly string[]): Promise<BatonRun> =>
      runBaton(words, { cwd: tmp.dir, env: { NO_COLOR: '1' }, timeoutMs: 90_000 });
    const rotateArgs = (state: string, wait: string) => [
      '--state-dir',
      state,
      'mesh',
      'rotate',
      '--pair',
      PAIR,
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      wait,
      // Every ssh step's bound, raised: a loaded CI machine's handshake is not what is tested here.
      '--timeout',
      '60',
    ];

    /** The real provisioner, as its unit runs it, cycling every 200 ms. */
    function startProvisioner(superuser: string): ChildProcess {
      const child = spawn(
        process.execPath,
        [...provisionerArgv(meshDirOn('db1'), sandbox, superuser, PROVIDER), '--watch', '--interval', '0.2'],
        { cwd: REPO, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } },
      );
      children.push(child);
      return child;
    }
    // Paused, it answers nothing (its heartbeat stays fresh for a minute): a rotation waits for it.
    const pause = () => provisioner!.kill('SIGSTOP');
    const carryOn = () => provisioner!.kill('SIGCONT');

    /** The consumer, reading its file as an app does, logs in; nothing is staged on either machine. */
    async function consumerLogsIn(): Promise<void> {
      await vi.waitFor(
        async () =>
          expect(await canLogin(sandbox, 'web1_app', readFileSync(consumerEnd(), 'utf8'))).toBe(true),
        { timeout: 10_000, interval: 100 },
      );
      expect(staged()).toEqual([]);
    }

    /**
     * Follows `mesh status --json`'s first next step, pasted exactly as printed (its `command`),
     * until status exits 0; returns what was run. A suggestion that is refused fails the test.
     */
    async function followStatus(state: string, limit = 6): Promise<string[]> {
      const ran: string[] = [];
      for (let i = 0; i < limit; i++) {
        const status = await batonWords([
          '--state-dir',
          state,
          'mesh',
          'status',
          '--inventory',
          inventory,
          '--json',
          '--timeout',
          '60',
        ]);
        if (status.exitCode === 0) return ran;
        const doc = JSON.parse(status.stdout) as { pairs: { next_steps: { command: string }[] }[] };
        const step = doc.pairs.find((p) => p.next_steps.length > 0)?.next_steps[0];
        if (!step) throw new Error(`status exits ${status.exitCode} and suggests nothing: ${status.stdout}`);
        const r = await batonWords(step.command.split(' ').slice(1));
        ran.push(`${step.command} → ${r.exitCode}`);
        if (r.exitCode !== 0 && r.exitCode !== 3)
          throw new Error(`${step.command} exited ${r.exitCode}: ${r.all}`);
      }
      throw new Error(`status never reached exit 0: ${ran.join('; ')}`);
    }

    beforeAll(async () => {
      assertBuilt();
      sandbox = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
      sshd = await startSshd();
      tmp = makeTempDir('baton-truth-ssh-');
      for (const m of ['db1', 'web1']) mkdirSync(meshDirOn(m), { recursive: true });
      const superuser = `su_${randomBytes(3).toString('hex')}`;
      inventory = writeSshPair(tmp.dir, sshd, { config: '/dev/null', provisionerRole: superuser });
      const first = randomBytes(24).toString('base64url');
      await asSuperuser(sandbox, async (c) =>
        c.query(
          `CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(first))}'`,
        ),
      );
      const file = path.join(tmp.dir, 'superuser.password');
      writeFileSync(file, first, { mode: 0o600 });
      const seeded = await batonWords([
        '--state-dir',
        stateDir(),
        'mesh',
        'seed',
        '--pair',
        `${PROVIDER}:provisioner`,
        '--from-file',
        file,
        '--inventory',
        inventory,
      ]);
      expect(seeded.exitCode, seeded.all).toBe(0);
      provisioner = startProvisioner(superuser);
      // A first rotation creates web1_app.
      const r = await batonWords(rotateArgs(stateDir(), '20'));
      expect(r.exitCode, r.all).toBe(0);
      await consumerLogsIn();
    }, 180_000);

    afterAll(async () => {
      for (const child of children)
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
        }
      await Promise.allSettled([
        (async () => ifSet(sshd)?.stop())(),
        (async () => ifSet(sandbox)?.destroy())(),
      ]);
      ifSet(tmp)?.cleanup();
    });

    it('two state dirs rotating one pair at once over ssh, 6 races: in every race one is exit 5 naming the holder; the consumer logs in and nothing is staged', async () => {
      const outcomes: string[] = [];
      for (let race = 0; race < 6; race++) {
        // The provisioner answers only once one of the two has ended: the refused one ends at once,
        // so the other is still waiting for its receipt, holding the lock. Without a lock that
        // excludes, neither ends before the fallback and both rotate (the test then fails).
        pause();
        let answered = false;
        const answer = () => {
          if (!answered) carryOn();
          answered = true;
        };
        const fallback = setTimeout(answer, 60_000);
        const runs: [ReturnType<typeof startBaton>, ReturnType<typeof startBaton>] = [
          startBaton(rotateArgs(stateDir('state-a'), '90'), {
            cwd: tmp.dir,
            env: { NO_COLOR: '1' },
            timeoutMs: 150_000,
          }),
          startBaton(rotateArgs(stateDir('state-b'), '90'), {
            cwd: tmp.dir,
            env: { NO_COLOR: '1' },
            timeoutMs: 150_000,
          }),
        ];
        void Promise.race(runs).then(answer);
        const [a, b] = await Promise.all(runs);
        clearTimeout(fallback);
        answer();
        const codes = [a.exitCode, b.exitCode].sort();
        outcomes.push(codes.join('/'));
        expect(codes, `${String(a.all)}\n---\n${String(b.all)}`).toEqual([0, 5]);
        const refused = a.exitCode === 5 ? a : b;
        // The holder: the other controller's command, its pid, its host and since when.
        expect(String(refused.stderr)).toMatch(
          /mesh rotate --pair pg-main:web1-app \(pid \d+ on \S+ since \S+\)/,
        );
        expect(String(refused.stderr)).toContain('Nothing was generated and nothing was sent.');
        await consumerLogsIn();
      }
      console.log(`two controllers over ssh, 6 races: ${outcomes.join(', ')} (exit codes; one 5 in each)`);
    }, 420_000);

    it('over ssh: rotation X stalls and rolls back, rotation Y is SIGKILLed between its commits; mesh rollback X leaves Y untouched and is refused naming Y; status --json followed as printed ends at exit 0', async () => {
      const state = stateDir();
      pause();
      // X: the provisioner does not answer within its wait, so X rolls back (exit 3).
      const x = await batonWords(rotateArgs(state, '1'));
      expect(x.exitCode, x.all).toBe(3);
      const idX = /Rotation (\S+):/.exec(x.stdout)![1]!;
      // Y: killed outright once its provider end is live and its consumer end waits, staged.
      const y = startBaton(rotateArgs(state, '60'), {
        cwd: tmp.dir,
        env: { NO_COLOR: '1' },
        timeoutMs: 90_000,
      });
      let out = '';
      y.all.on('data', (c: Buffer) => (out += c.toString('utf8')));
      await vi.waitFor(() => expect(out).toContain('committed 1/1 provider ends'), {
        timeout: 30_000,
        interval: 20,
      });
      y.kill('SIGKILL');
      await y;
      // The remote shell that held Y's lock ends with its connection: the holder's words go.
      const holder = path.join(providerDir(), '.baton.lock.holder');
      await vi.waitFor(() => expect(existsSync(holder)).toBe(false), { timeout: 15_000, interval: 50 });
      const intent = Object.values(rotationRecords(meshDirOn('db1'))).find(
        (r) => r.pair === PAIR && r.end === 'provides',
      )!;
      expect(intent.phase).toBe('committing');
      const idY = String(intent.rotation);
      expect(idY).not.toBe(idX);
      expect(existsSync(`${consumerEnd()}.next`)).toBe(true);

      // Pasted from scrollback: the older id. Refused, naming the unfinished one; nothing touched.
      const before = machines();
      const rollbackX = await batonWords([
        '--state-dir',
        state,
        'mesh',
        'rollback',
        idX,
        '--inventory',
        inventory,
        '--wait',
        '0.2',
        '--timeout',
        '60',
      ]);
      expect(rollbackX.exitCode, rollbackX.all).toBe(2);
      expect(rollbackX.stderr).toContain(`${PAIR} belongs to rotation ${idY}, which has not finished`);
      expect(rollbackX.stderr).toContain(`mesh resume ${idY}`);
      expect(machines()).toEqual(before);

      // The provisioner comes back (it applies Y's provider end); the operator follows status, as printed.
      carryOn();
      const ran = await followStatus(state);
      expect(ran[0]).toMatch(new RegExp(`mesh resume ${idY} .*→ 0$`));
      console.log(`over ssh, followed status: ${ran.join(' ; ')}`);
      await consumerLogsIn();
    }, 180_000);
  },
);
