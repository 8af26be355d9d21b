/**
 * The mesh half of the sandbox: pg-main's superuser password delivered to db1 the way the
 * mesh delivers one, and the provisioner watching db1's deliveries in-process. (The first
 * rotation of every pair is the runners' `seedPasswords`, passed to startSandbox.)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Secret } from '../mesh/secret.js';
import { localTransport } from '../transport/local-transport.js';
import { DRILL_MESH_DIR, DRILL_PROVIDER, type DrillSandbox } from './drill-layout.js';
import type { ProvisionerGate } from './provisioner-gate.js';

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

/** The provisioner for pg-main in `--watch` mode, in-process, polling every 200 ms, each cycle through `gate`. */
export async function startProvisioner(
  sandbox: DrillSandbox,
  gate: ProvisionerGate,
  log: (line: string) => void = () => {},
): Promise<RunningProvisioner> {
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
  const gated = {
    runCycle: (signal?: AbortSignal) => gate.cycle(() => provisioner.runCycle(signal), abort.signal),
  };
  const loop = watchProvisioner(gated, { intervalMs: 200, maxBackoffMs: 1000, signal: abort.signal, log });
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}
