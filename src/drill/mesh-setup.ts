/**
 * The mesh half of the sandbox: pg-main's superuser password delivered to db1 the way the
 * mesh delivers one, the provisioner watching db1's deliveries in-process, and a first
 * rotation of every pair so each consumer has a password that logs in before step 4 starts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Secret } from '../mesh/secret.js';
import { localTransport } from '../transport/local-transport.js';
import { DRILL_MESH_DIR, DRILL_PROVIDER, type DrillSandbox } from './sandbox.js';

/** Where the provisioner reads its superuser password: `consumes/<provider>/<superuser>` on db1. */
export function superuserFilePath(sandbox: DrillSandbox): string {
  return sandbox.meshPath('db1', 'consumes', DRILL_PROVIDER, sandbox.postgres.superuser);
}

/**
 * Staged and committed through the local transport, as the mesh writes every credential
 * (0600, atomic): the provisioner's superuser password comes from a delivered file, never
 * from the environment (mesh seed).
 */
export async function deliverSuperuserPassword(sandbox: DrillSandbox): Promise<void> {
  const secret = Secret.fromText(readFileSync(sandbox.postgres.superuserPasswordFile, 'utf8'));
  const db1 = localTransport('db1', sandbox.machineRoot('db1'));
  const live = path.posix.join(DRILL_MESH_DIR, 'consumes', DRILL_PROVIDER, sandbox.postgres.superuser);
  const signal = AbortSignal.timeout(5_000);
  await db1.stage([{ path: live, secret }], signal);
  await db1.commit([live], signal);
}

export interface RunningProvisioner {
  /** Ends the watch loop and waits for the current cycle to finish. */
  stop(): Promise<void>;
}

/** The provisioner for pg-main in `--watch` mode, in-process, polling every 200 ms. */
export async function startProvisioner(sandbox: DrillSandbox, log: (line: string) => void = () => {}): Promise<RunningProvisioner> {
  const { PostgresProvisioner } = await import('../provisioner/postgres-provisioner.js');
  const { postgresRoles } = await import('../provisioner/postgres-roles.js');
  const { watchProvisioner } = await import('../provisioner/watch-provisioner.js');
  const provisioner = new PostgresProvisioner({
    meshDir: sandbox.meshPath('db1'),
    provider: DRILL_PROVIDER,
    connect: postgresRoles({
      host: sandbox.postgres.host,
      port: sandbox.postgres.port,
      database: 'postgres',
      superuser: sandbox.postgres.superuser,
      superuserFile: superuserFilePath(sandbox),
    }),
    log,
  });
  const abort = new AbortController();
  const loop = watchProvisioner(provisioner, { intervalMs: 200, maxBackoffMs: 1000, signal: abort.signal, log });
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

/**
 * Every pair of pg-main gets its first password through a real rotation, and the drill waits
 * until the provisioner applied them all: step 4 needs an old password that logs in.
 */
export async function seedPasswords(sandbox: DrillSandbox): Promise<void> {
  const { rotateScripted } = await import('./rotate.js');
  const { BatonError } = await import('../errors.js');
  const { state: result } = await rotateScripted(sandbox, { by: 'provider', name: DRILL_PROVIDER });
  if (result.step !== 'done' || result.applied.length !== result.plan.pairs.length) {
    throw new BatonError('failed', {
      what: `The first passwords of pg-main were not applied (the rotation ended in "${result.step}", ${result.step === 'done' ? result.applied.length : 0} of ${result.plan.pairs.length} applied).`,
      where: sandbox.postgres.logFile,
      next: 'Read the PostgreSQL log named above; run the drill again with --keep to look at the sandbox.',
    });
  }
}
