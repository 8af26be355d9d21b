/**
 * 8 SIGKILLs at seeded random points of a provider-wide rotation (`mesh rotate --provider
 * pg-main --yes` over four pairs: two single, one alternating, and the provisioner's own
 * superuser pair), the BUILT CLI against Debian's PostgreSQL 15 with the real provisioner
 * (`baton provision postgres --watch`). After each kill the operator does only what
 * `mesh status --json` says — each `next_steps[].args` run exactly as printed — until status
 * exits 0. Then every consumer logs in the way an app that re-reads its file for each
 * connection does, and no staged file is left on any machine.
 *
 * The kill offsets are drawn over the length of an unkilled rotation measured first, so they
 * fall before, during and after each of its steps (intent, prepare, commit, receipts, consumer
 * commits, records). Run `npm run build` first.
 */
import { provisionerArgv } from '../helpers/postgres-mesh.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadInventory } from '../../src/mesh/inventory.js';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { loginRole } from '../../src/mesh/alternating.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { REPO } from '../helpers/bundle-script.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { consumerLogin } from '../helpers/password-app.js';
import {
  asSuperuser,
  loginRefusal,
  DEBIAN_POSTGRES_BIN,
  debianPostgresMissing,
} from '../helpers/postgres.js';
import { prng } from '../helpers/prng.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, runBaton, startBaton } from '../helpers/run-baton.js';
import { followStatus as followFromStatus } from './follow-status.js';
import { writeLocalMesh } from './mesh-fixture.js';

const PROVIDER = 'pg-main';
const MESH = '/var/lib/baton/mesh';
const KILLS = 8;
const SEED = Number(process.env.BATON_KILL_SEED ?? 20261202);

describeWithPart(
  debianPostgresMissing(),
  'SIGKILLs during a provider-wide rotation (Debian PostgreSQL)',
  () => {
    let sandbox: PostgresSandbox;
    let tmp: { dir: string; cleanup: () => void };
    let superuser: string;
    let provisioner: ChildProcess | undefined;

    const stateDir = () => path.join(tmp.dir, 'state');
    const inventory = () => path.join(tmp.dir, 'mesh.yaml');
    const machines = () => path.join(tmp.dir, 'machines');
    const meshDirOn = (m: string) => path.join(machines(), m, MESH);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    const baton = (args: readonly string[]) =>
      runBaton(args, { cwd: tmp.dir, env: { NO_COLOR: '1', BATON_CONFIG: '' }, timeoutMs: 60_000 });
    const rotateArgs = () => [
      '--state-dir',
      stateDir(),
      'mesh',
      'rotate',
      '--provider',
      PROVIDER,
      '--inventory',
      inventory(),
      '--yes',
      '--wait',
      '10',
    ];

    /** The real provisioner, as its unit runs it, cycling every 100 ms. */
    function startProvisioner(): ChildProcess {
      const child = spawn(
        process.execPath,
        [...provisionerArgv(meshDirOn('db1'), sandbox, superuser, PROVIDER), '--watch', '--interval', '0.1'],
        { cwd: REPO, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } },
      );
      return child;
    }

    const journalLines = () => {
      const file = path.join(stateDir(), JOURNAL_FILE);
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').length : 0;
    };

    /**
     * Starts the rotation and resolves once it has begun acting (its first journal record, written
     * as it resolves the machines): node's start-up is no point to kill it at. The time is the
     * start of its work.
     */
    async function startRotation() {
      const before = journalLines();
      const child = startBaton(rotateArgs(), { cwd: tmp.dir, env: { NO_COLOR: '1', BATON_CONFIG: '' } });
      const run = { ended: false };
      void child.then(() => (run.ended = true));
      while (!run.ended && journalLines() === before) await sleep(2);
      return { child, acting: Date.now() };
    }

    const staged = () =>
      (readdirSync(machines(), { recursive: true }) as string[]).filter((f) => f.endsWith('.next'));

    /**
     * Each consumer of the inventory, as an app that re-reads its file for a new connection: the
     * file says the login (an alternating pair's keyword/value text) and the password. Returns the
     * refused ones, named.
     */
    async function refusedConsumers(): Promise<string[]> {
      const refused: string[] = [];
      for (const pair of loadInventory(inventory()).pairs) {
        const file = path.join(meshDirOn(pair.consumerMachine), 'consumes', PROVIDER, pair.role);
        if (!existsSync(file)) {
          refused.push(`${pair.consumer}: no file`);
          continue;
        }
        const login = consumerLogin(readFileSync(file, 'utf8'), pair.role);
        const code = await loginRefusal(sandbox, login.user, login.password);
        if (code) refused.push(`${pair.consumer} as ${login.user}: ${code}`);
      }
      return refused;
    }

    /** What `mesh status --json` says, followed as printed until it exits 0 (follow-status.ts). */
    const followStatus = () =>
      followFromStatus({
        baton,
        statusArgs: ['--state-dir', stateDir(), 'mesh', 'status', '--json', '--inventory', inventory()],
        debug: Boolean(process.env.BATON_KILL_DEBUG),
      });

    beforeAll(async () => {
      assertBuilt();
      sandbox = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
      tmp = makeTempDir('baton-provider-kills-');
      superuser = `su_${randomBytes(3).toString('hex')}`;
      writeLocalMesh(tmp.dir, { webs: 3, provisionerRole: superuser });
      // web2-app alternates between web2_app_a and web2_app_b; the others are single.
      writeFileSync(
        inventory(),
        readFileSync(inventory(), 'utf8').replace(
          '{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
          '{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main], credential: alternating }',
        ),
      );
      expect(loadInventory(inventory()).pairs.map((p) => p.credential)).toContain('alternating');
      const first = randomBytes(24).toString('base64url');
      await asSuperuser(sandbox, async (c) =>
        c.query(
          `CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(first))}'`,
        ),
      );
      const file = path.join(tmp.dir, 'superuser.password');
      writeFileSync(file, first, { mode: 0o600 });
      const seeded = await baton([
        '--state-dir',
        stateDir(),
        'mesh',
        'seed',
        '--pair',
        `${PROVIDER}:provisioner`,
        '--from-file',
        file,
        '--inventory',
        inventory(),
      ]);
      expect(seeded.exitCode, seeded.all).toBe(0);
      provisioner = startProvisioner();
    }, 120_000);

    afterAll(async () => {
      if (provisioner && provisioner.exitCode === null) provisioner.kill('SIGKILL');
      await ifSet(sandbox)?.destroy();
      ifSet(tmp)?.cleanup();
    });

    it(`${KILLS} SIGKILLs at random points of a provider-wide rotation: following status's commands always ends at exit 0, every consumer logs in, nothing is staged`, async () => {
      // The first rotation delivers every pair; how long it acts is the span the kills are drawn over.
      const calibration = await startRotation();
      const whole = await calibration.child;
      const span = Date.now() - calibration.acting;
      expect(whole.exitCode, String(whole.all)).toBe(0);
      expect(await refusedConsumers()).toEqual([]);
      const random = prng(SEED);
      const outcomes: string[] = [];
      let kills = 0;
      let longest = span;
      // A draw past the rotation's end kills nothing: it is said, the span shrinks to what that run took, and another is drawn.
      for (let attempt = 0; kills < KILLS && attempt < 2 * KILLS; attempt++) {
        const offset = Math.round(random() * longest);
        const { child, acting } = await startRotation();
        await sleep(offset);
        child.kill('SIGKILL');
        const r = await child;
        const killed = r.signal === 'SIGKILL';
        if (killed) kills++;
        else longest = Math.min(longest, Date.now() - acting);
        const ran = await followStatus();
        const refused = await refusedConsumers();
        const left = staged();
        const outcome = `${offset} ms: ${killed ? 'killed' : `had ended (exit ${r.exitCode})`}; followed ${ran.length === 0 ? 'nothing to do' : ran.join(', ')}; refused ${refused.length}, staged ${left.length}`;
        outcomes.push(outcome);
        expect(refused, outcome).toEqual([]);
        expect(left, outcome).toEqual([]);
      }
      console.log(
        `provider-wide rotation, ${kills} SIGKILLs (seed ${SEED}, offsets after its first journal record, over ${span} ms, the length of an unkilled one):\n  ${outcomes.join('\n  ')}`,
      );
      expect(kills).toBe(KILLS);
      // The alternating pair's consumer still names one of its two logins.
      const web2 = readFileSync(path.join(meshDirOn('web2'), 'consumes', PROVIDER, 'web2_app'), 'utf8');
      expect([loginRole('web2_app', 'a'), loginRole('web2_app', 'b')]).toContain(
        consumerLogin(web2, 'web2_app').user,
      );
    }, 300_000);
  },
);
