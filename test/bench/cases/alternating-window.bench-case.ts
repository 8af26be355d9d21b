/**
 * The window of both credential modes, measured in the same run on the same mesh, provisioner
 * and PostgreSQL (the embedded sandbox; provisioner `--interval 0.5`): web1-app has one login
 * role, web2-app is `credential: alternating`. Five rotations of each, taken in turns through the
 * built CLI (`baton mesh rotate --pair --yes`), each with an app opening a new connection every
 * 50 ms with what its consumer file says (test/helpers/password-app.ts).
 * - One role: the journal's `windows_ms` (receipt → consumer commit, what the summary prints),
 *   median of 5, and the app's failed logins.
 * - Alternating: the app's failed logins over the 5 rotations (0 expected: the consumer moves to a
 *   login the database already has, and the one it left keeps its password), and its window seen
 *   from outside: per rotation, first failed login → first success after it (0 without one).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startPostgres } from '../../../src/sandbox/postgres.js';
import {
  consumerLogin,
  startPasswordApp,
  type AppAttempt,
  type PasswordApp,
} from '../../helpers/password-app.js';
import { writeLocalMesh } from '../../mesh/mesh-fixture.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { PROVIDER, seedAndWatch } from '../lib/rotation-mesh.js';
import { summarize } from '../lib/stats.js';

const ROTATIONS = 5;
const MESH = '/var/lib/baton/mesh';
const run = promisify(execFile);

/** From the first failed login to the first success after it, in ms (0 when none failed). */
function outsideWindow(attempts: readonly AppAttempt[]): number {
  const first = attempts.findIndex((a) => !a.ok);
  if (first < 0) return 0;
  const recovered = attempts.slice(first).find((a) => a.ok);
  return (recovered?.at ?? attempts.at(-1)!.at) - attempts[first]!.at;
}

export const alternatingWindowCase: BenchCase = {
  name: 'alternating-window',
  async run(ctx) {
    ctx.log('alternating-window: starting the sandbox PostgreSQL');
    const pg = await startPostgres();
    let provisioner: ChildProcess | undefined;
    const apps: PasswordApp[] = [];
    try {
      const root = ctx.tempDir('alternating-window');
      const superuser = `su_${randomBytes(3).toString('hex')}`;
      const meshDb1 = path.join(root, 'machines/db1', MESH);
      const inventory = writeLocalMesh(root, { webs: 2, provisionerRole: superuser });
      writeFileSync(
        inventory,
        readFileSync(inventory, 'utf8').replace(
          '{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
          '{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main], credential: alternating }',
        ),
      );
      const state = path.join(root, 'state');
      const baton = (...args: string[]) =>
        run(process.execPath, [BIN, '--state-dir', state, ...args], {
          cwd: root,
          env: { ...process.env, NO_COLOR: '1' },
        });
      provisioner = await seedAndWatch(pg, {
        root,
        superuser,
        inventory,
        meshDb1,
        intervalSeconds: 0.5,
        baton,
      });
      const rotate = (consumer: string) =>
        baton(
          'mesh',
          'rotate',
          '--pair',
          `${PROVIDER}:${consumer}`,
          '--inventory',
          inventory,
          '--yes',
          '--wait',
          '20',
        );
      const pairs = [
        {
          consumer: 'web1-app',
          role: 'web1_app',
          file: path.join(root, 'machines/web1', MESH, 'consumes', PROVIDER, 'web1_app'),
          windows: [] as number[],
          failed: [] as number[],
          outside: [] as number[],
        },
        {
          consumer: 'web2-app',
          role: 'web2_app',
          file: path.join(root, 'machines/web2', MESH, 'consumes', PROVIDER, 'web2_app'),
          windows: [] as number[],
          failed: [] as number[],
          outside: [] as number[],
        },
      ];
      for (const pair of pairs) await rotate(pair.consumer); // creates the roles (and the logins)
      for (const pair of pairs) apps.push(startPasswordApp(pg, () => pair.file, pair.role));
      for (let i = 0; i < ROTATIONS; i++) {
        for (const [n, pair] of pairs.entries()) {
          ctx.log(`alternating-window: ${pair.consumer} rotation ${i + 1} of ${ROTATIONS}`);
          const app = apps[n]!;
          const from = app.attempts.length;
          const { stdout } = await rotate(pair.consumer);
          const id = /\(rotation (\S+?)\)/.exec(stdout)?.[1];
          const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { id: string; phase: string; windows_ms?: Record<string, number> });
          const ms = records.find((r) => r.id === id && r.phase === 'applied')?.windows_ms?.[
            `${PROVIDER}:${pair.consumer}`
          ];
          if (typeof ms === 'number') pair.windows.push(ms);
          // This rotation's attempts: up to the app's first success with what the file now says.
          const fresh = consumerLogin(readFileSync(pair.file, 'utf8'), pair.role);
          while (
            !app.attempts
              .slice(from)
              .some((a) => a.ok && a.user === fresh.user && a.password === fresh.password)
          )
            await new Promise((r) => setTimeout(r, 50));
          const during = app.attempts.slice(from);
          pair.failed.push(during.filter((a) => !a.ok).length);
          pair.outside.push(outsideWindow(during));
        }
      }
      for (const app of apps.splice(0)) await app.stop();
      const [single, alternating] = pairs as [(typeof pairs)[0], (typeof pairs)[0]];
      if (single.windows.length !== ROTATIONS)
        throw new Error(`the one-role rotations recorded ${single.windows.length} windows of ${ROTATIONS}`);
      const s = summarize(single.windows);
      const a = summarize(alternating.outside);
      const sum = (xs: readonly number[]) => xs.reduce((x, y) => x + y, 0);
      return {
        figures: [
          figure({
            id: 'rotation.window-alternating',
            title: `Window per pair, alternating vs one role, same run (median of ${ROTATIONS} rotations each)`,
            measured: {
              label: `alternating (web2-app): failed logins ${sum(alternating.failed)} over ${ROTATIONS} rotations; first failure → recovery`,
              value: a.median,
              unit: 'ms',
              summary: a,
            },
            baseline: {
              label: "one role (web1-app): receipt → consumer commit, the journal's window",
              value: s.median,
              unit: 'ms',
              summary: s,
            },
            goal: { kind: 'absolute', max: 0, unit: 'ms' },
            notes: [
              `one role: windows ${single.windows.map((x) => x.toFixed(0)).join(', ')} ms; the app's failed logins per rotation ${single.failed.join(', ')}`,
              `alternating: the app's failed logins per rotation ${alternating.failed.join(', ')}${alternating.windows.length > 0 ? `; receipt → consumer commit ${alternating.windows.map((x) => x.toFixed(0)).join(', ')} ms, no window: the login the consumer left kept its password meanwhile` : ''}`,
              'apps open a new connection every 50 ms, re-reading the consumer file; real PostgreSQL (embedded), provisioner --interval 0.5, local transport',
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      for (const app of apps) await app.stop();
      provisioner?.kill('SIGTERM');
      await pg.destroy();
    }
  },
};
