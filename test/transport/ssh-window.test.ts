/**
 * The window over a network: the built CLI rotating one pair over ssh to a real sshd through a
 * relay that holds every chunk 25 ms each way (a 50 ms round trip), against a real PostgreSQL
 * whose provisioner runs on "db1", while an app on "web1" connects every 50 ms re-reading its
 * password file. Five rotations here; each must be measured and journaled, no login with the NEW
 * password may ever fail, and the app's failures with the old one must fit inside the window
 * the journal records (one per 50 ms attempt, plus the one in flight). How SHORT the window is
 * over this network is a speed figure: the `ssh-window` bench measures it (`npm run bench`), not
 * this test, which failed under load at 101–126 ms while the behaviour was right. Run
 * `npm run build` first.
 */
import { provisionerArgv } from '../helpers/postgres-mesh.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser } from '../helpers/postgres.js';
import { startPasswordApp } from '../helpers/password-app.js';
import { describeWithPart, itWithPart } from '../helpers/real-part.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { delayedSshConfig, sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { writeSshPair } from '../mesh/mesh-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
const ROTATIONS = 5;
const unavailable = sshdUnavailable();

describeWithPart(unavailable, 'the rotation window over ssh at a 50 ms round trip', () => {
  let sshd: Sshd;
  let sandbox: PostgresSandbox;
  let tmp: { dir: string; cleanup: () => void };
  let provisioner: ChildProcess | undefined;
  beforeAll(async () => {
    assertBuilt();
    [sshd, sandbox] = await Promise.all([startSshd(), startPostgres()]);
    tmp = makeTempDir('baton-ssh-window-');
  }, 120_000);
  afterAll(async () => {
    provisioner?.kill('SIGTERM');
    await Promise.all([ifSet(sshd)?.stop(), ifSet(sandbox)?.destroy()]);
    ifSet(tmp)?.cleanup();
  });

  itWithPart(
    unavailable,
    `${ROTATIONS} rotations of one pair: each window measured, the old password's failures inside it, none with a new password`,
    async () => {
      const relayLog = path.join(tmp.dir, 'relay.log');
      const meshOf = (m: string) => path.join(tmp.dir, m, 'mesh');
      const superuser = `su_${randomBytes(3).toString('hex')}`;
      const inventory = writeSshPair(tmp.dir, sshd, {
        config: delayedSshConfig(tmp.dir, 25, relayLog),
        provisionerRole: superuser,
      });
      const state = path.join(tmp.dir, 'state');
      const baton = (...args: string[]) =>
        runBaton(['--state-dir', state, ...args, '--inventory', inventory], {
          cwd: tmp.dir,
          env: { NO_COLOR: '1' },
          timeoutMs: 60_000,
        });

      // The provisioner's superuser, seeded into the mesh over ssh; only its verifier goes to the server.
      const first = randomBytes(24).toString('base64url');
      const verifier = await scramVerifier(Buffer.from(first));
      await asSuperuser(sandbox, (c) =>
        c.query(`CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${verifier}'`),
      );
      const file = path.join(tmp.dir, 'superuser.password');
      writeFileSync(file, first, { mode: 0o600 });
      expect(
        (await baton('mesh', 'seed', '--pair', `${PROVIDER}:provisioner`, '--from-file', file)).exitCode,
      ).toBe(0);
      mkdirSync(meshOf('db1'), { recursive: true });
      provisioner = spawn(
        process.execPath,
        [...provisionerArgv(meshOf('db1'), sandbox, superuser, PROVIDER), '--watch', '--interval', '0.5'],
        { stdio: 'ignore' },
      );

      const rotate = () => baton('mesh', 'rotate', '--pair', `${PROVIDER}:web1-app`, '--yes', '--wait', '20');
      expect((await rotate()).exitCode).toBe(0); // creates the role
      const consumerFile = path.join(meshOf('web1'), 'consumes', PROVIDER, 'web1_app');
      const app = startPasswordApp(sandbox, () => consumerFile, 'web1_app');
      await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(2), {
        timeout: 10_000,
      });
      const rotations: { old: string; fresh: string; from: number; to: number; window: number }[] = [];
      for (let i = 0; i < ROTATIONS; i++) {
        const old = readFileSync(consumerFile, 'utf8');
        const from = app.attempts.length;
        const r = await rotate();
        expect(r.stderr).toBe('');
        expect(r.exitCode).toBe(0);
        const fresh = readFileSync(consumerFile, 'utf8');
        await vi.waitFor(
          () => expect(app.attempts.filter((a) => a.ok && a.password === fresh).length).toBeGreaterThan(1),
          { timeout: 10_000 },
        );
        const id = /Rotation (\S+):/.exec(r.stdout)?.[1] ?? /\(rotation (\S+?)\)/.exec(r.stdout)?.[1];
        const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { id: string; phase: string; windows_ms?: Record<string, number> });
        const window = records.find((rec) => rec.id === id && rec.phase === 'applied')?.windows_ms?.[
          `${PROVIDER}:web1-app`
        ];
        expect(window, r.stdout).toEqual(expect.any(Number));
        rotations.push({ old, fresh, from, to: app.attempts.length, window: window! });
      }
      await app.stop();

      expect(existsSync(relayLog)).toBe(true);
      expect(readFileSync(relayLog, 'utf8')).toContain(`127.0.0.1:${sshd.port} +25 ms`);
      const windows = rotations.map((r) => r.window);
      for (const { old, fresh, from, to, window } of rotations) {
        const during = app.attempts.slice(from, to);
        expect(during.filter((a) => !a.ok && a.password === fresh)).toEqual([]);
        // The app tries every 50 ms: a refused old password outside the journaled window would
        // mean the window baton reports is not the one the consumer lived through.
        expect(
          during.filter((a) => !a.ok && a.password === old).length,
          `failed logins, windows ${windows.join(', ')} ms`,
        ).toBeLessThanOrEqual(Math.ceil(window / 50) + 1);
      }
    },
    180_000,
  );
});
