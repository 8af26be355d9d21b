/**
 * Alternating credentials against a REAL PostgreSQL (the embedded one), end to end through the
 * built CLI: `baton mesh rotate | status | resume | rollback` on a local-transport mesh, the
 * real provisioner (`baton provision postgres --watch`) as a process, and an app that opens a
 * new connection every 50 ms with whatever its consumer file says (test/helpers/password-app.ts).
 * Baton and the provisioner are SIGKILLed for real; a leftover is cleared only with what
 * `mesh status` suggests. The tests share one database and one mesh and run in order.
 *
 * Run `npm run build` before running this file alone.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { conninfoLogin, loginRole, parseConninfo } from '../../src/mesh/alternating.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { consumerLogin, startPasswordApp } from '../helpers/password-app.js';
import { asSuperuser, canLogin, loginRefusal } from '../helpers/postgres.js';
import { prng } from '../helpers/prng.js';
import { psqlMissing, psqlWithConsumerFile } from '../helpers/psql.js';
import { partPresent } from '../helpers/real-part.js';
import { startBaton } from '../helpers/run-baton.js';

const PROVIDER = 'pg-main';
const SEED = Number(process.env.BATON_ALTERNATING_SEED ?? 20261201);
const ROTATIONS = 20;

let provisioner: MeshProvisioner | undefined;

beforeAll(() => {
  partPresent('psql', psqlMissing());
});
// One mesh for the file, web1-app alternating from the start; the provisioner cycles every 100 ms.
const suite = usePostgresMesh({
  per: 'file',
  prefix: 'baton-alt-pg-',
  batonTimeoutMs: 30_000,
  beforeSeed: (mesh) => setCredential('web1-app', 'alternating', mesh.inventory),
  keepDir: Boolean(process.env.BATON_ALTERNATING_DEBUG),
});
beforeAll(() => {
  provisioner = startProvisioner();
});

const inventory = () => suite.mesh.inventory;
const state = () => suite.mesh.stateDir;
const consumerFile = (m: string, role: string) => suite.mesh.consumerFile(m, role);
const providerFile = (name: string) => suite.mesh.providerFile(name);
const WEB1 = () => consumerFile('web1', 'web1_app');
const WEB2 = () => consumerFile('web2', 'web2_app');

const baton = (...args: string[]) => suite.mesh.baton(...args);
const rotate = (pair: string, wait = '10', ...extra: string[]) =>
  baton(
    'mesh',
    'rotate',
    '--pair',
    `${PROVIDER}:${pair}`,
    '--inventory',
    inventory(),
    '--yes',
    '--wait',
    wait,
    ...extra,
  );

/** Sets a consumer's `credential:` in the inventory (or removes it: the default, single). */
function setCredential(consumer: string, credential: 'alternating' | undefined, file = inventory()): void {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      if (!line.includes(`name: ${consumer},`)) return line;
      const bare = line.replace(/, credential: \w+/, '');
      return credential ? bare.replace(/ }$/, `, credential: ${credential} }`) : bare;
    });
  writeFileSync(file, lines.join('\n'));
}

/** The real provisioner, as the unit of docs/provisioner-service.md runs it, cycling every 100 ms. */
const startProvisioner = () => suite.mesh.startProvisioner(0.1);

async function killProvisioner(): Promise<void> {
  if (!provisioner) return;
  await provisioner.kill();
  provisioner = undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const journalLines = () =>
  existsSync(path.join(state(), 'mesh-journal.jsonl'))
    ? readFileSync(path.join(state(), 'mesh-journal.jsonl'), 'utf8').trim().split('\n')
    : [];

interface StatusPair {
  readonly consumer: string;
  readonly state: string;
  readonly next_steps: readonly {
    readonly args: readonly string[];
    readonly placeholders: readonly unknown[];
  }[];
}

/**
 * Does only what `mesh status` suggests (resume or roll back a leftover, whichever `choose`
 * picks when both are offered), until it exits 0. Returns what was run.
 */
async function followStatus(pair: string, choose: () => 'resume' | 'rollback'): Promise<string[]> {
  const ran: string[] = [];
  let last = '';
  for (let round = 0; round < 30; round++) {
    const status = await baton(
      'mesh',
      'status',
      '--pair',
      `${PROVIDER}:${pair}`,
      '--json',
      '--inventory',
      inventory(),
    );
    if (status.exitCode === 0) return ran;
    last = status.all;
    const doc = JSON.parse(status.stdout) as { pairs: StatusPair[] };
    // `args` start with the global flags given (--state-dir): the command's own words follow them.
    const steps = doc.pairs
      .flatMap((p) => p.next_steps)
      .map((s) => ({ ...s, args: s.args.slice(s.args.indexOf('mesh')) }))
      .filter(
        (s) =>
          s.placeholders.length === 0 &&
          s.args[0] === 'mesh' &&
          ['resume', 'rollback', 'rotate'].includes(s.args[1]!),
      );
    const wanted = choose();
    const step = steps.find((s) => s.args[1] === wanted) ?? steps[0];
    if (!step) {
      await sleep(100); // pending: the provisioner's next cycle
      continue;
    }
    // `args` run as they are after `baton` and the global flags: they carry the inventory given.
    expect(step.args).toContain('--inventory');
    const args = [
      ...step.args,
      ...(step.args.includes('--wait') ? [] : ['--wait', '10']),
      ...(step.args.includes('--yes') || step.args[1] !== 'rotate' ? [] : ['--yes']),
    ];
    ran.push(args.slice(0, 3).join(' '));
    const done = await baton(...args);
    if (process.env.BATON_ALTERNATING_DEBUG)
      console.log(`${args.join(' ')} → exit ${done.exitCode}\n${done.all}`);
  }
  throw new Error(
    `mesh status did not reach exit 0 after following it (ran: ${ran.join('; ') || 'nothing'}): ${last}`,
  );
}

/** Each test can run alone (-t): a pair an earlier test would have rotated is rotated once here. */
async function deliveredOnce(consumer: string, file: string): Promise<void> {
  if (!existsSync(file)) expect((await rotate(consumer)).exitCode).toBe(0);
}

describe('alternating credentials against a real PostgreSQL', () => {
  it('libpq reads the consumer file as it is (psql, no password in argv or env); a table made through either login is owned by the group, and both logins read both', async () => {
    const { sandbox } = suite;
    expect((await rotate('web1-app')).exitCode).toBe(0);
    const first = readFileSync(WEB1(), 'utf8');
    const r = await rotate('web1-app');
    expect(r.exitCode, r.all).toBe(0);
    const second = readFileSync(WEB1(), 'utf8');
    const logins = [conninfoLogin(first), conninfoLogin(second)];
    expect(new Set(logins)).toEqual(new Set(['web1_app_a', 'web1_app_b']));
    // The login the consumer left still holds the password it had: keep both files for psql.
    const left = path.join(suite.mesh.dir, 'left.conninfo');
    writeFileSync(left, first, { mode: 0o600 });

    const live = psqlWithConsumerFile(sandbox, WEB1(), 'SELECT session_user, current_user, current_role;');
    expect(live.stderr).toBe('');
    expect(live.status).toBe(0);
    // SET role at login: the session is the login, but current_user/current_role report the group.
    expect(live.stdout.trim()).toBe(`${logins[1]}|web1_app|web1_app`);
    for (const password of [parseConninfo(first)!.password!, parseConninfo(second)!.password!]) {
      expect(live.argv.join(' ')).not.toContain(password);
      expect(Object.values(live.env).join(' ')).not.toContain(password);
      expect(live.script).not.toContain(password);
    }
    // The grants belong to the group (an operator's GRANT, as for any pair's role).
    await asSuperuser(sandbox, (c) => c.query('GRANT CREATE ON SCHEMA public TO web1_app'));
    const tables: string[] = [];
    for (const [file, login] of [
      [left, logins[0]!],
      [WEB1(), logins[1]!],
    ] as const) {
      const table = `t_${login}`;
      tables.push(table);
      const made = psqlWithConsumerFile(
        sandbox,
        file,
        `CREATE TABLE ${table} (x int); INSERT INTO ${table} VALUES (1);`,
      );
      expect(made.stderr).toBe('');
      expect(made.status).toBe(0);
    }
    const owners = await asSuperuser(
      sandbox,
      async (c) =>
        (
          await c.query<{ tablename: string; tableowner: string }>(
            'SELECT tablename, tableowner FROM pg_tables WHERE tablename = ANY($1) ORDER BY tablename',
            [tables],
          )
        ).rows,
    );
    expect(owners).toEqual(tables.sort().map((tablename) => ({ tablename, tableowner: 'web1_app' })));
    for (const file of [left, WEB1()]) {
      const read = psqlWithConsumerFile(
        sandbox,
        file,
        tables.map((t) => `SELECT count(*) FROM ${t};`).join(' '),
      );
      expect(read.status, read.stderr).toBe(0);
      expect(read.stdout.trim().split('\n')).toEqual(['1', '1']);
    }
  });

  it(`${ROTATIONS} alternating rotations with baton and the provisioner SIGKILLed and the provisioner stopped: the app sees 0 failed logins`, async () => {
    const { sandbox } = suite;
    const random = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    // Every kind at least twice, in a seeded order.
    const ops = [
      'plain',
      'plain',
      'plain',
      'plain',
      'plain',
      'plain',
      'kill-baton',
      'kill-baton',
      'kill-baton',
      'kill-baton',
      'kill-baton-after-commit',
      'kill-baton-after-commit',
      'kill-baton-after-commit',
      'kill-provisioner',
      'kill-provisioner',
      'kill-provisioner',
      'stop-provisioner',
      'stop-provisioner',
      'provisioner-down',
      'provisioner-down',
    ] as const;
    const order = ops
      .map((op) => ({ op, key: random() }))
      .sort((x, y) => x.key - y.key)
      .map((x) => x.op);
    await deliveredOnce('web1-app', WEB1());
    const app = startPasswordApp(sandbox, WEB1, 'web1_app');
    const counts = {
      batonKills: 0,
      provisionerKills: 0,
      provisionerStops: 0,
      moved: 0,
      followed: [] as string[],
    };
    const started = Date.now();
    try {
      for (const op of order) {
        const before = readFileSync(WEB1(), 'utf8');
        // Only a killed baton can leave something behind; any other rotation finishes or rolls back.
        let follow = false;
        switch (op) {
          case 'plain':
            expect((await rotate('web1-app')).exitCode).toBe(0);
            break;
          case 'kill-baton': {
            const child = startBaton(
              [
                '--state-dir',
                state(),
                'mesh',
                'rotate',
                '--pair',
                `${PROVIDER}:web1-app`,
                '--inventory',
                inventory(),
                '--yes',
                '--wait',
                '10',
              ],
              { cwd: suite.mesh.dir, env: { NO_COLOR: '1' } },
            );
            await sleep(30 + random() * 300);
            child.kill('SIGKILL');
            await child;
            counts.batonKills++;
            follow = true;
            break;
          }
          case 'kill-baton-after-commit': {
            // The provisioner held still, so the kill lands between the provider's commit and the consumer's.
            provisioner!.child.kill('SIGSTOP');
            const committed = journalLines().filter((l) => l.includes('"phase":"committed"')).length;
            const child = startBaton(
              [
                '--state-dir',
                state(),
                'mesh',
                'rotate',
                '--pair',
                `${PROVIDER}:web1-app`,
                '--inventory',
                inventory(),
                '--yes',
                '--wait',
                '10',
              ],
              { cwd: suite.mesh.dir, env: { NO_COLOR: '1' } },
            );
            const gone = child.then((r) => `baton exited ${r.exitCode} before its provider commit: ${r.all}`);
            await Promise.race([
              vi.waitFor(
                () =>
                  expect(
                    journalLines().filter((l) => l.includes('"phase":"committed"')).length,
                  ).toBeGreaterThan(committed),
                { timeout: 10_000, interval: 10 },
              ),
              gone.then((why) => Promise.reject(new Error(why))),
            ]);
            child.kill('SIGKILL');
            await child;
            counts.batonKills++;
            provisioner!.child.kill('SIGCONT');
            follow = true;
            break;
          }
          case 'kill-provisioner': {
            const rotation = rotate('web1-app');
            await sleep(random() * 400);
            await killProvisioner();
            counts.provisionerKills++;
            await sleep(random() * 800);
            provisioner = startProvisioner();
            expect((await rotation).exitCode).toBe(0);
            break;
          }
          case 'stop-provisioner': {
            provisioner!.child.kill('SIGSTOP');
            counts.provisionerStops++;
            const rotation = rotate('web1-app');
            await sleep(1_000);
            provisioner!.child.kill('SIGCONT');
            expect((await rotation).exitCode).toBe(0);
            break;
          }
          case 'provisioner-down': {
            // Down for longer than the rotation waits: it rolls back, and the consumer never moved.
            // Nobody answers at all, so a short wait proves it as well as a long one.
            await killProvisioner();
            counts.provisionerKills++;
            const r = await rotate('web1-app', '0.3');
            expect(r.exitCode, r.all).toBe(3);
            // Rolled back, not refused: nothing is left, and the consumer never moved.
            expect(r.stdout, r.all).toContain('Nothing is left to do');
            expect(readFileSync(WEB1(), 'utf8')).toBe(before);
            provisioner = startProvisioner();
            break;
          }
        }
        if (!provisioner || provisioner.child.exitCode !== null) provisioner = startProvisioner();
        if (process.env.BATON_ALTERNATING_DEBUG)
          console.log(
            `op ${op}: ${JSON.stringify(
              journalLines()
                .slice(-3)
                .map((l) => JSON.parse(l).phase),
            )}`,
          );
        if (follow)
          counts.followed.push(
            ...(await followStatus('web1-app', () => pick(['resume', 'rollback'] as const))),
          );
        if (readFileSync(WEB1(), 'utf8') !== before) counts.moved++;
      }
      // The app must have logged in after the last rotation too.
      const last = readFileSync(WEB1(), 'utf8');
      await vi.waitFor(
        () =>
          expect(
            app.attempts.some((a) => a.ok && a.password === consumerLogin(last, 'web1_app').password),
          ).toBe(true),
        { timeout: 5_000 },
      );
    } finally {
      provisioner?.child.kill('SIGCONT');
      await app.stop();
    }
    const failed = app.failures();
    console.log(
      `alternating rotations: ${ROTATIONS} (seed ${SEED}; ${counts.moved} moved the consumer) in ${((Date.now() - started) / 1000).toFixed(1)} s; baton SIGKILLs: ${counts.batonKills}, provisioner SIGKILLs: ${counts.provisionerKills}, provisioner stopped: ${counts.provisionerStops}; followed mesh status: ${counts.followed.length} (${[...new Set(counts.followed)].join(', ')}); app logins: ${app.attempts.length}, failed logins: ${failed.length}`,
    );
    expect(failed).toEqual([]);
    expect(app.attempts.length).toBeGreaterThan(50);
    // Both logins were used, and the consumer moved on most rotations.
    expect(new Set(app.attempts.filter((a) => a.ok).map((a) => a.user))).toEqual(
      new Set(['web1_app_a', 'web1_app_b']),
    );
    expect(counts.moved).toBeGreaterThanOrEqual(ROTATIONS / 2);
    expect(counts.followed.length).toBeGreaterThan(0);
  }, 120_000);

  it('--revoke-previous: the login the consumer left is refused afterwards (28P01) with its old password, its open session is named, and the app saw 0 failures', async () => {
    const { sandbox } = suite;
    await deliveredOnce('web1-app', WEB1());
    const before = readFileSync(WEB1(), 'utf8');
    const left = consumerLogin(before, 'web1_app');
    expect(left.format).toBe('conninfo');
    // A session of the login about to be left, still open when it is revoked.
    const session = new pg.Client({
      host: sandbox.host,
      port: sandbox.port,
      database: 'postgres',
      user: left.user,
      password: left.password,
      application_name: 'revoke-test',
    });
    session.on('error', () => undefined);
    await session.connect();
    const app = startPasswordApp(sandbox, WEB1, 'web1_app');
    try {
      await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(2), {
        timeout: 5_000,
      });
      const r = await rotate('web1-app', '10', '--revoke-previous');
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      // Its open session is named (who still uses it), not ended.
      expect(r.stdout).toMatch(new RegExp(`open sessions of ${left.user} \\(not ended[^\\n]*"revoke-test"`));
      const now = consumerLogin(readFileSync(WEB1(), 'utf8'), 'web1_app');
      expect(now.user).not.toBe(left.user);
      expect(await loginRefusal(sandbox, left.user, left.password)).toBe('28P01');
      expect(await canLogin(sandbox, now.user, now.password)).toBe(true);
      // Without --end-sessions its session was only named: it still runs.
      expect((await session.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await sleep(300);
    } finally {
      await app.stop();
      await session.end().catch(() => undefined);
    }
    expect(app.failures()).toEqual([]);
    expect(app.attempts.length).toBeGreaterThan(5);
    const status = await baton(
      'mesh',
      'status',
      '--pair',
      `${PROVIDER}:web1-app`,
      '--inventory',
      inventory(),
    );
    expect(status.exitCode, status.stdout).toBe(0);
    expect(status.stdout).toContain('revoked');
  });

  it("--revoke-previous --end-sessions: the provisioner ends the left login's open session once its fresh password is applied, and the summary says how many", async () => {
    const { sandbox } = suite;
    await deliveredOnce('web1-app', WEB1());
    const left = consumerLogin(readFileSync(WEB1(), 'utf8'), 'web1_app');
    const session = new pg.Client({
      host: sandbox.host,
      port: sandbox.port,
      database: 'postgres',
      user: left.user,
      password: left.password,
      application_name: 'end-sessions-test',
    });
    session.on('error', () => undefined);
    await session.connect();
    try {
      const r = await rotate('web1-app', '10', '--revoke-previous', '--end-sessions');
      expect(r.stderr).toBe('');
      expect(r.exitCode, r.stdout).toBe(0);
      expect(r.stdout).toContain(`ended 1 open session(s) of ${left.user}.`);
      expect(await loginRefusal(sandbox, left.user, left.password)).toBe('28P01');
      await expect(session.query('SELECT 1')).rejects.toThrow();
      const open = await asSuperuser(
        sandbox,
        async (c) =>
          (await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1', [left.user]))
            .rows[0].n as number,
      );
      expect(open).toBe(0);
      // The request was consumed: nothing is left under .end-sessions.
      expect(
        existsSync(
          path.join(
            path.dirname(providerFile('web1_app')),
            '.end-sessions',
            `web1_app+${left.user.slice(-1)}`,
          ),
        ),
      ).toBe(false);
    } finally {
      await session.end().catch(() => undefined);
    }
  });

  it('switching a live pair to alternating and back: the app, reading the bare secret before and the keyword/value file after, sees 0 failed logins', async () => {
    const { sandbox } = suite;
    expect((await rotate('web2-app')).exitCode).toBe(0);
    const single = readFileSync(WEB2(), 'utf8');
    expect(consumerLogin(single, 'web2_app').format).toBe('bare');
    const app = startPasswordApp(sandbox, WEB2, 'web2_app');
    try {
      await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(2), {
        timeout: 5_000,
      });

      setCredential('web2-app', 'alternating');
      const on = await rotate('web2-app');
      expect(on.stderr).toBe('');
      expect(on.exitCode).toBe(0);
      const first = consumerLogin(readFileSync(WEB2(), 'utf8'), 'web2_app');
      expect(first).toMatchObject({ format: 'conninfo', user: loginRole('web2_app', 'a') });
      // The other login was made with the verifier the role had: the consumer's old password works there.
      expect(await canLogin(sandbox, loginRole('web2_app', 'b'), single)).toBe(true);
      // Once the consumer's file changed format, the plain role's file goes and the group stops logging in.
      expect(existsSync(providerFile('web2_app'))).toBe(false);
      await vi.waitFor(
        async () => expect(['28000', '28P01']).toContain(await loginRefusal(sandbox, 'web2_app', single)),
        { timeout: 5_000, interval: 50 },
      );
      // What status says of a pair just switched: live a; b has no file of its own yet, and holds the copied password (checked above).
      const switched = await baton(
        'mesh',
        'status',
        '--pair',
        `${PROVIDER}:web2-app`,
        '--json',
        '--inventory',
        inventory(),
      );
      expect(switched.exitCode, switched.all).toBe(0);
      expect(JSON.parse(switched.stdout).pairs[0].logins).toEqual({
        live: 'web2_app_a',
        other: { login: 'web2_app_b', state: 'copied' },
      });
      expect((await rotate('web2-app')).exitCode).toBe(0);
      const second = consumerLogin(readFileSync(WEB2(), 'utf8'), 'web2_app');
      expect(second.user).toBe(loginRole('web2_app', 'b'));
      await sleep(300);

      setCredential('web2-app', undefined);
      const off = await rotate('web2-app');
      expect(off.stderr).toBe('');
      expect(off.exitCode).toBe(0);
      const back = consumerLogin(readFileSync(WEB2(), 'utf8'), 'web2_app');
      expect(back.format).toBe('bare');
      expect(await canLogin(sandbox, 'web2_app', back.password)).toBe(true);
      // The logins' files go once the consumer reads the bare secret again; the provisioner stops them logging in.
      expect(existsSync(providerFile('web2_app+a'))).toBe(false);
      expect(existsSync(providerFile('web2_app+b'))).toBe(false);
      await vi.waitFor(
        async () =>
          expect(['28000', '28P01']).toContain(await loginRefusal(sandbox, second.user, second.password)),
        { timeout: 5_000, interval: 50 },
      );
      await sleep(300);
    } finally {
      await app.stop();
    }
    expect(app.failures()).toEqual([]);
    const formats = new Set(app.attempts.filter((a) => a.ok).map((a) => a.user));
    expect(formats).toEqual(new Set(['web2_app', 'web2_app_a', 'web2_app_b']));
    expect((await baton('mesh', 'status', '--inventory', inventory())).exitCode).toBe(0);
  });
});
