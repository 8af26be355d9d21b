/**
 * A mesh on a real PostgreSQL with its provisioner: the set-up the real-PostgreSQL mesh suites
 * share. A local-transport inventory (db1 provides pg-main; machines are directories), a
 * superuser role made for the mesh (`su_…`, only its verifier sent) and seeded into it the way an
 * operator does it (`baton mesh seed` from a 0600 file), the BUILT CLI bound to the mesh's state
 * dir, and the real provisioner (`baton provision postgres --watch`) started on demand.
 *
 * `usePostgresMesh` registers the hooks (one server per file; one mesh per file or per test);
 * `startPostgresMesh` builds one mesh on a server a suite started itself (an inventory of its
 * own, an sshd beside it). Each suite keeps its own assertions; this only sets up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, vi } from 'vitest';
import { heartbeatPath, parseHeartbeat } from '../../src/mesh/provisioner-heartbeat.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { REPO } from './bundle-script.js';
import { makeTempDir } from './fs-snapshot.js';
import { asSuperuser, DEBIAN_POSTGRES_BIN } from './postgres.js';
import { assertBuilt, BIN, runBaton, type BatonRun } from './run-baton.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';
import { registerChild } from './process-registry.js';
import { waitOn } from './wait-on.js';

export const MESH_PROVIDER = 'pg-main';
/** The mesh directory on every local machine (the inventory's default `mesh_dir`). */
export const MESH_DIR = '/var/lib/baton/mesh';

/** A provisioner process of the mesh. */
export interface MeshProvisioner {
  readonly child: ChildProcess;
  /** What it printed so far (stdout and stderr), for a failure's message. */
  output(): string;
  /** Settles when the process has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM, as its unit is stopped; resolves once it exited. */
  stop(): Promise<void>;
  /** SIGKILL (after SIGCONT, should it be held with SIGSTOP); resolves once it exited. */
  kill(): Promise<void>;
}

export interface PostgresMesh {
  readonly sandbox: PostgresSandbox;
  /** The mesh's temp dir: the inventory, `state/`, `machines/<m>/`. */
  readonly dir: string;
  readonly inventory: string;
  /** baton's --state-dir (the journal is there). */
  readonly stateDir: string;
  /** The provisioner's superuser role (a pair of the mesh: `pg-main:provisioner`). */
  readonly superuser: string;
  /** The password the superuser was made and seeded with. */
  readonly seededPassword: string;
  /** The `mesh seed` run (it exited 0). */
  readonly seeded: BatonRun;
  meshDirOn(machine: string): string;
  consumerFile(machine: string, role: string): string;
  providerFile(role: string): string;
  /** The built CLI with `--state-dir <stateDir>` first, run in `dir`, NO_COLOR. */
  baton(...args: string[]): Promise<BatonRun>;
  /** `provision postgres` on db1 for this mesh, before its `--watch`/`--once` (argv after node). */
  provisionerArgs(): string[];
  /** The real provisioner watching db1 every `intervalSeconds`, as its unit runs it. */
  startProvisioner(intervalSeconds: number): MeshProvisioner;
  /**
   * Resolves once `provisioner` wrote `cycles` heartbeats (one after each `--watch` cycle): it
   * has then read the provider ends at least that often, whatever its interval and the load.
   */
  cyclesOf(provisioner: MeshProvisioner, cycles: number, timeoutMs?: number): Promise<void>;
  /** Starts `command args` from the repository, output captured, SIGKILLed by `killChildren`. */
  spawnTracked(command: string, args: readonly string[]): MeshProvisioner;
  /** SIGKILLs every process this mesh started that still runs. */
  killChildren(): void;
  /** killChildren, then removes `dir`. */
  cleanup(): void;
}

export interface PostgresMeshOptions {
  /** The temp dir's prefix (names the suite in /tmp). */
  readonly prefix: string;
  /** Writes the inventory at `<dir>/mesh.yaml`; default writeLocalMesh (db1, web1, web2, the provisioner pair). */
  readonly writeInventory?: (dir: string, superuser: string) => void;
  /** Runs after the inventory is written and the superuser made, before the seed. */
  readonly beforeSeed?: (mesh: Omit<PostgresMesh, 'seeded'>) => void | Promise<void>;
  /** The seeded file's text; default the password as it is. */
  readonly seedFileText?: (password: string) => string;
  /** The bound on each baton run (default 60 s). */
  readonly batonTimeoutMs?: number;
  /** Keep `dir` at clean-up (printing where), to read a failed run's files. */
  readonly keepDir?: boolean;
}

/**
 * `provision postgres` for `provider` (default pg-main) on the mesh dir `meshDir`, logging in as
 * `superuser` (argv after node, before `--watch`/`--once`): the provisioner as its unit runs it,
 * spelled once for every suite that starts one.
 */
export function provisionerArgv(
  meshDir: string,
  sandbox: Pick<PostgresSandbox, 'host' | 'port'>,
  superuser: string,
  provider = MESH_PROVIDER,
): string[] {
  return [
    BIN,
    'provision',
    'postgres',
    '--mesh-dir',
    meshDir,
    '--provider',
    provider,
    '--pg-host',
    sandbox.host,
    '--pg-port',
    String(sandbox.port),
    '--superuser',
    superuser,
  ];
}

/** Makes the mesh on `sandbox` and seeds its provisioner's pair; nothing runs yet. */
export async function startPostgresMesh(
  sandbox: PostgresSandbox,
  options: PostgresMeshOptions,
): Promise<PostgresMesh> {
  const tmp = makeTempDir(options.prefix);
  const superuser = `su_${randomBytes(3).toString('hex')}`;
  const inventory = path.join(tmp.dir, 'mesh.yaml');
  const stateDir = path.join(tmp.dir, 'state');
  const meshDirOn = (m: string) => path.join(tmp.dir, 'machines', m, MESH_DIR);
  const children: ChildProcess[] = [];
  const killChildren = () => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const spawnTracked = (command: string, args: readonly string[]): MeshProvisioner => {
    const child = spawn(command, args, {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    children.push(child);
    registerChild(child, `${path.basename(command)} ${args.slice(0, 3).join(' ')}`);
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (text += c.toString('utf8')));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const running = () => child.exitCode === null && child.signalCode === null;
    return {
      child,
      output: () => text,
      exited,
      async stop() {
        if (running()) child.kill('SIGTERM');
        await exited;
      },
      async kill() {
        if (running()) {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
        }
        await exited;
      },
    };
  };
  const provisionerArgs = () => provisionerArgv(meshDirOn('db1'), sandbox, superuser);
  const baton = (...args: string[]) =>
    runBaton(['--state-dir', stateDir, ...args], {
      cwd: tmp.dir,
      env: { NO_COLOR: '1' },
      timeoutMs: options.batonTimeoutMs ?? 60_000,
    });
  const seededPassword = randomBytes(24).toString('base64url');
  const partial = {
    sandbox,
    dir: tmp.dir,
    inventory,
    stateDir,
    superuser,
    seededPassword,
    meshDirOn,
    consumerFile: (m: string, role: string) => path.join(meshDirOn(m), 'consumes', MESH_PROVIDER, role),
    providerFile: (role: string) => path.join(meshDirOn('db1'), 'provides', MESH_PROVIDER, role),
    baton,
    provisionerArgs,
    startProvisioner: (intervalSeconds: number) =>
      spawnTracked(process.execPath, [
        ...provisionerArgs(),
        '--watch',
        '--interval',
        String(intervalSeconds),
      ]),
    spawnTracked,
    cyclesOf: async (provisioner: MeshProvisioner, cycles: number, timeoutMs?: number) => {
      const file = heartbeatPath(path.join(meshDirOn('db1'), 'provides', MESH_PROVIDER));
      const seen = new Set<string>();
      const count = () => {
        const beat = existsSync(file) ? parseHeartbeat(readFileSync(file, 'utf8')) : undefined;
        if (beat !== undefined && beat.pid === provisioner.child.pid) seen.add(beat.at);
        if (seen.size < cycles) throw new Error(`${seen.size} of ${cycles} provisioner cycles seen`);
      };
      // Cycles come as long as the provisioner runs: waited for while it does (a loaded machine
      // makes them slower), `timeoutMs` only when a test bounds the cycles' time on purpose.
      if (timeoutMs === undefined) await waitOn(count, provisioner.child, 'provisioner cycles');
      else await vi.waitFor(count, { timeout: timeoutMs, interval: 20 });
    },
    killChildren,
    cleanup: () => {
      killChildren();
      if (options.keepDir) console.log(`kept ${tmp.dir}`);
      else tmp.cleanup();
    },
  };
  try {
    (options.writeInventory ?? ((dir, role) => writeLocalMesh(dir, { provisionerRole: role })))(
      tmp.dir,
      superuser,
    );
    // Only the verifier is sent: a statement log must never show a password.
    const verifier = await scramVerifier(Buffer.from(seededPassword));
    await asSuperuser(sandbox, (c) =>
      c.query(`CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${verifier}'`),
    );
    await options.beforeSeed?.(partial);
    const file = path.join(tmp.dir, 'superuser.password');
    writeFileSync(file, options.seedFileText?.(seededPassword) ?? seededPassword, { mode: 0o600 });
    const seeded = await baton(
      'mesh',
      'seed',
      '--pair',
      `${MESH_PROVIDER}:provisioner`,
      '--from-file',
      file,
      '--inventory',
      inventory,
    );
    expect(seeded.exitCode, seeded.all).toBe(0);
    return { ...partial, seeded };
  } catch (error) {
    partial.cleanup();
    throw error;
  }
}

export interface UsePostgresMeshOptions extends PostgresMeshOptions {
  /** Debian's PostgreSQL 15 or the embedded build (default embedded). */
  readonly server?: 'debian' | 'embedded';
  /** `log_statement = 'all'` on the server. */
  readonly logStatements?: boolean;
  /** A fresh mesh for each test (default) or one for the whole file, its tests in order. */
  readonly per?: 'test' | 'file';
  /** The bound on the hook that makes a mesh (default 60 s). */
  readonly setupTimeoutMs?: number;
}

/** What a suite reads once its hooks ran: the file's server and the current mesh. */
export interface PostgresMeshSuite {
  readonly sandbox: PostgresSandbox;
  readonly mesh: PostgresMesh;
}

/**
 * Registers the hooks for one server per file (started in beforeAll, destroyed in afterAll) and
 * a mesh per test or per file; every process a mesh started is SIGKILLed when it is taken down.
 * Call it inside the suite's describe (or at the top of the file); read `.mesh` in tests and in
 * hooks registered after this call.
 */
export function usePostgresMesh(options: UsePostgresMeshOptions): PostgresMeshSuite {
  let sandbox: PostgresSandbox | undefined;
  let mesh: PostgresMesh | undefined;
  const make = async () => {
    if (!sandbox) throw new Error('the PostgreSQL sandbox did not start');
    mesh = await startPostgresMesh(sandbox, options);
  };
  const takeDown = () => {
    mesh?.cleanup();
    mesh = undefined;
  };
  beforeAll(async () => {
    assertBuilt();
    sandbox = await startPostgres({
      ...(options.server === 'debian' ? { binDir: DEBIAN_POSTGRES_BIN } : {}),
      ...(options.logStatements ? { logStatements: true } : {}),
    });
    if (options.per === 'file') await make();
  }, 120_000);
  afterAll(async () => {
    takeDown();
    await sandbox?.destroy().catch(() => undefined);
  });
  if (options.per !== 'file') {
    beforeEach(make, options.setupTimeoutMs ?? 60_000);
    afterEach(takeDown);
  }
  return {
    get sandbox() {
      if (!sandbox) throw new Error('the PostgreSQL sandbox is read before its beforeAll ran');
      return sandbox;
    },
    get mesh() {
      if (!mesh) throw new Error('the mesh is read outside a test (or its set-up failed)');
      return mesh;
    },
  };
}
