/**
 * The provisioner at 5,000 roles against a REAL PostgreSQL (the embedded sandbox), each figure
 * against a baseline measured in the same run:
 * - creating 1,000 roles: one cycle over 1,000 new delivered files, against psql running the
 *   same 1,000 `CREATE ROLE … LOGIN PASSWORD 'SCRAM-SHA-256$…'` in one session (verifiers
 *   computed beforehand and not timed: baton computes its own inside the figure);
 * - an idle poll over 5,000 applied roles (CPU, the --watch loop's connection kept open),
 *   against a readdir and 5,000 stats of the same files;
 * - 100 changed roles applied: the cycle after 100 files were delivered again, against psql
 *   running 100 `ALTER ROLE … PASSWORD 'SCRAM-…'` in one session.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PostgresProvisioner } from '../../../src/provisioner/postgres-provisioner.js';
import { postgresRoles } from '../../../src/provisioner/postgres-roles.js';
import { scramVerifier } from '../../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../../src/sandbox/postgres.js';
import { PSQL, psqlMissing } from '../../helpers/psql.js';
import type { BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const ROLES = 5_000;
const CREATED = 1_000;
const CHANGED = 100;
const PROVIDER = 'pg-fleet';
const run = promisify(execFile);

async function cpuMs<T>(fn: () => Promise<T> | T): Promise<{ ms: number; result: T }> {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, result };
}

function deliver(dir: string, role: string): void {
  const temp = path.join(dir, `${role}.next`);
  writeFileSync(temp, randomBytes(32).toString('base64url'), { mode: 0o600 });
  renameSync(temp, path.join(dir, role));
}

/** psql in one session over `statements` (autocommit, as an operator's script runs); its wall time. */
async function psqlSession(pg: PostgresSandbox, dir: string, statements: readonly string[]): Promise<number> {
  const script = path.join(dir, `psql-${randomBytes(4).toString('hex')}.sql`);
  writeFileSync(script, statements.map((s) => `${s};\n`).join(''), { mode: 0o600 });
  const passfile = path.join(dir, 'pgpass');
  writeFileSync(
    passfile,
    `${pg.host}:${pg.port}:*:${pg.superuser}:${readFileSync(pg.superuserPasswordFile, 'utf8').trim()}\n`,
    { mode: 0o600 },
  );
  const started = performance.now();
  await run(
    PSQL,
    [
      '-X',
      '-q',
      '-v',
      'ON_ERROR_STOP=1',
      '-h',
      pg.host,
      '-p',
      String(pg.port),
      '-U',
      pg.superuser,
      '-d',
      'postgres',
      '-f',
      script,
    ],
    { env: { ...process.env, PGPASSFILE: passfile }, maxBuffer: 16 * 1024 * 1024 },
  );
  return performance.now() - started;
}

async function verifiers(count: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(await scramVerifier(randomBytes(32)));
  return out;
}

export const provisioner5000Case: BenchCase = {
  name: 'provisioner-5000',
  async run(ctx) {
    const missing = psqlMissing();
    if (missing)
      return {
        figures: [],
        skipped: [{ id: 'provisioner.5000', title: 'The provisioner at 5,000 roles', reason: missing }],
      };
    ctx.log('provisioner-5000: starting the sandbox PostgreSQL');
    const pg = await startPostgres();
    try {
      const meshDir = ctx.tempDir('provisioner-5000', { tmpfs: true });
      const scratch = ctx.tempDir('provisioner-5000-psql');
      const provides = path.join(meshDir, 'provides', PROVIDER);
      mkdirSync(provides, { recursive: true, mode: 0o700 });
      const roles = Array.from({ length: ROLES }, (_, i) => `fleet_role_${String(i).padStart(5, '0')}`);
      const lines: string[] = [];
      const provisioner = new PostgresProvisioner({
        meshDir,
        provider: PROVIDER,
        connect: postgresRoles({
          host: pg.host,
          port: pg.port,
          database: 'postgres',
          superuser: pg.superuser,
          superuserFile: pg.superuserPasswordFile,
        }),
        log: (line) => lines.push(line),
      });
      provisioner.keepConnectionOpen();

      // Creating 1,000 roles: baton, then psql on 1,000 other names, the same statements.
      ctx.log(`provisioner-5000: creating ${CREATED} roles (baton, then psql)`);
      for (const role of roles.slice(0, CREATED)) deliver(provides, role);
      const createStarted = performance.now();
      const created = await provisioner.runCycle();
      const createMs = performance.now() - createStarted;
      if (created.applied.length !== CREATED)
        throw new Error(
          `the first cycle applied ${created.applied.length} of ${CREATED}: ${created.failed[0]?.reason ?? ''}`,
        );
      const createVerifiers = await verifiers(CREATED);
      const psqlCreateMs = await psqlSession(
        pg,
        scratch,
        createVerifiers.map((v, i) => `CREATE ROLE "psql_role_${i}" LOGIN PASSWORD '${v}'`),
      );

      ctx.log(`provisioner-5000: the other ${ROLES - CREATED} roles (the setup, not a figure)`);
      for (const role of roles.slice(CREATED)) deliver(provides, role);
      const setupStarted = performance.now();
      const rest = await provisioner.runCycle();
      const setupMs = performance.now() - setupStarted;
      if (rest.applied.length !== ROLES - CREATED)
        throw new Error(`the setup cycle applied ${rest.applied.length} of ${ROLES - CREATED}`);
      // Settles the stat caches for files that were "racy" at the first scan.
      await provisioner.runCycle();
      await provisioner.runCycle();

      ctx.log(`provisioner-5000: idle polls over ${ROLES} roles, and readdir + stats`);
      const idle: number[] = [];
      const floor: number[] = [];
      for (let i = 0; i < 15; i++) {
        const { ms, result } = await cpuMs(() => provisioner.runCycle());
        if (result.unchanged !== ROLES || result.applied.length > 0)
          throw new Error(
            `an idle cycle did work: ${result.applied.length} applied, ${result.unchanged} unchanged`,
          );
        idle.push(ms);
        floor.push(
          (
            await cpuMs(() => {
              for (const name of readdirSync(provides))
                if (!name.startsWith('.')) statSync(path.join(provides, name));
            })
          ).ms,
        );
      }

      ctx.log(`provisioner-5000: ${CHANGED} changed roles (baton, then psql), 3 rounds`);
      const changedMs: number[] = [];
      const psqlChangedMs: number[] = [];
      for (let round = 0; round < 3; round++) {
        const picked = roles.slice(CREATED + round * CHANGED, CREATED + (round + 1) * CHANGED);
        for (const role of picked) deliver(provides, role);
        const started = performance.now();
        const result = await provisioner.runCycle();
        changedMs.push(performance.now() - started);
        if (result.applied.length !== CHANGED)
          throw new Error(`the cycle after ${CHANGED} changes applied ${result.applied.length}`);
        const alter = await verifiers(CHANGED);
        psqlChangedMs.push(
          await psqlSession(
            pg,
            scratch,
            alter.map((v, i) => `ALTER ROLE "psql_role_${round * CHANGED + i}" PASSWORD '${v}'`),
          ),
        );
      }
      await provisioner.closeConnection();

      const idleS = summarize(idle);
      const floorS = summarize(floor);
      const ch = summarize(changedMs);
      const pch = summarize(psqlChangedMs);
      const disk = 'delivered files and receipts on tmpfs; PostgreSQL (embedded) on the temp disk';
      return {
        figures: [
          figure({
            id: 'provisioner.create-1000',
            title: `Provisioner: creating ${CREATED} roles, one cycle (wall)`,
            measured: { label: `runCycle over ${CREATED} new files`, value: createMs, unit: 'ms' },
            baseline: {
              label: `psql, one session: ${CREATED} CREATE ROLE … PASSWORD 'SCRAM-…' (verifiers precomputed)`,
              value: psqlCreateMs,
              unit: 'ms',
            },
            goal: { kind: 'ratio', max: 2 },
            notes: [disk, 'baton computes its 1,000 SCRAM verifiers inside the figure'],
          }),
          figure({
            id: 'provisioner.idle-5000',
            title: `Provisioner: one idle poll over ${ROLES} applied roles (CPU, median of 15)`,
            measured: {
              label: 'runCycle, nothing changed',
              value: idleS.median,
              unit: 'ms CPU',
              summary: idleS,
            },
            baseline: {
              label: `readdir + ${ROLES} stats`,
              value: floorS.median,
              unit: 'ms CPU',
              summary: floorS,
            },
            goal: { kind: 'ratio', max: 1.5 },
            notes: [
              disk,
              `the connection kept open between polls; setting up the other ${ROLES - CREATED} roles took ${(setupMs / 1000).toFixed(1)} s`,
            ],
          }),
          figure({
            id: 'provisioner.changed-100',
            title: `Provisioner: ${CHANGED} of ${ROLES} roles changed, applied in one cycle (wall, median of 3)`,
            measured: { label: `runCycle, ${CHANGED} changed`, value: ch.median, unit: 'ms', summary: ch },
            baseline: {
              label: `psql, one session: ${CHANGED} ALTER ROLE … PASSWORD 'SCRAM-…'`,
              value: pch.median,
              unit: 'ms',
              summary: pch,
            },
            goal: { kind: 'ratio', max: 1.5 },
            notes: [disk],
          }),
        ],
        skipped: [],
      };
    } finally {
      await pg.destroy();
    }
  },
};
