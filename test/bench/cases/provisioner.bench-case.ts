/**
 * Provisioner: CPU of one poll cycle over 1,000 delivered roles that a REAL PostgreSQL
 * (the embedded sandbox) has already accepted — the cost a `--watch` service pays every few
 * seconds for as long as the machine is up — and of one cycle in which 10 of them changed.
 * Baseline, same run: the readdir and 1,000 stats that any stat-first poll has to make.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PostgresProvisioner } from '../../../src/provisioner/postgres-provisioner.js';
import { postgresRoles } from '../../../src/provisioner/postgres-roles.js';
import { startPostgres } from '../../../src/sandbox/postgres.js';
import type { BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const ROLES = 1_000;
const CHANGED = 10;
const PROVIDER = 'pg-bench';

/** CPU (user + system, every thread of this process) spent in `fn`, in ms. */
async function cpuMs<T>(fn: () => Promise<T> | T): Promise<{ ms: number; result: T }> {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, result };
}

/** The mesh's way of replacing a delivered file: a temp file beside it, renamed over it. */
function deliver(dir: string, role: string): void {
  const temp = path.join(dir, `${role}.next`);
  writeFileSync(temp, randomBytes(32).toString('base64url'), { mode: 0o600 });
  renameSync(temp, path.join(dir, role));
}

export const provisionerCase: BenchCase = {
  name: 'provisioner',
  async run(ctx) {
    ctx.log('provisioner: starting the sandbox PostgreSQL');
    const pg = await startPostgres();
    try {
      const meshDir = ctx.tempDir('provisioner', { tmpfs: true });
      const provides = path.join(meshDir, 'provides', PROVIDER);
      mkdirSync(provides, { recursive: true, mode: 0o700 });
      const roles = Array.from({ length: ROLES }, (_, i) => `bench_role_${String(i).padStart(4, '0')}`);
      for (const role of roles) deliver(provides, role);
      const lines: string[] = [];
      const make = () =>
        new PostgresProvisioner({
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

      ctx.log(`provisioner: applying ${ROLES} roles (the setup, not a figure)`);
      const provisioner = make();
      const setupStarted = performance.now();
      const first = await provisioner.runCycle();
      const setupMs = performance.now() - setupStarted;
      if (first.applied.length !== ROLES)
        throw new Error(
          `the first cycle applied ${first.applied.length} of ${ROLES}: ${first.failed[0]?.reason ?? first.blocked?.what ?? ''}`,
        );
      // One more pass settles the stat cache for files that were "racy" (changed within the
      // timestamp granularity) at the first scan: what follows is the steady state of --watch.
      await provisioner.runCycle();

      const idle: number[] = [];
      for (let i = 0; i < 20; i++) {
        const { ms, result } = await cpuMs(() => provisioner.runCycle());
        if (result.unchanged !== ROLES || result.applied.length > 0)
          throw new Error(
            `an idle cycle did work: ${result.applied.length} applied, ${result.unchanged} unchanged`,
          );
        idle.push(ms);
      }
      const floor: number[] = [];
      for (let i = 0; i < 20; i++) {
        floor.push(
          (
            await cpuMs(() => {
              for (const name of readdirSync(provides))
                if (!name.startsWith('.')) statSync(path.join(provides, name));
            })
          ).ms,
        );
      }
      const fresh = await cpuMs(() => make().runCycle());
      if (fresh.result.unchanged !== ROLES)
        throw new Error(
          `a fresh provisioner did not recognise the receipts: ${fresh.result.unchanged} unchanged`,
        );

      const changed: number[] = [];
      const changedWall: number[] = [];
      for (let round = 0; round < 3; round++) {
        const picked = roles.slice(round * CHANGED, (round + 1) * CHANGED);
        for (const role of picked) deliver(provides, role);
        const started = performance.now();
        const { ms, result } = await cpuMs(() => provisioner.runCycle());
        changedWall.push(performance.now() - started);
        if (result.applied.length !== CHANGED)
          throw new Error(`the cycle after ${CHANGED} changes applied ${result.applied.length}`);
        changed.push(ms);
      }
      const idleS = summarize(idle);
      const floorS = summarize(floor);
      const changedS = summarize(changed);
      return {
        figures: [
          figure({
            id: 'provisioner.idle-cycle',
            title: `Provisioner: one idle poll cycle over ${ROLES} applied roles (CPU, median)`,
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
            goal: { kind: 'absolute', max: 20, unit: 'ms CPU' },
            notes: [
              `median of 20 cycles; a fresh provisioner's first cycle (receipts read, every file hashed) cost ${fresh.ms.toFixed(0)} ms CPU`,
              `real PostgreSQL ${pg.host}:${pg.port} (embedded); applying all ${ROLES} roles as setup took ${(setupMs / 1000).toFixed(1)} s`,
              'delivered files on tmpfs',
            ],
          }),
          figure({
            id: 'provisioner.changed-cycle',
            title: `Provisioner: one cycle where ${CHANGED} of ${ROLES} changed (CPU, median)`,
            measured: {
              label: `runCycle, ${CHANGED} changed`,
              value: changedS.median,
              unit: 'ms CPU',
              summary: changedS,
            },
            baseline: { label: 'idle cycle', value: idleS.median, unit: 'ms CPU' },
            goal: { kind: 'none' },
            notes: [
              `median of 3 rounds; wall ${summarize(changedWall).median.toFixed(0)} ms; this process's CPU only (SCRAM verifiers are computed here, the server's own work is not counted)`,
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      await pg.destroy();
    }
  },
};
