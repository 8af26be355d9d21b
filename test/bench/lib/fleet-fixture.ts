/**
 * A fleet on one loopback sshd, for the fleet and loaded-controller cases: N machines, each its
 * own ssh_config alias (so its own connection, as baton counts them) and its own mesh_dir; db1
 * provides pg-main and every other machine consumes it. The provisioner is a stand-in in this
 * process that follows db1's provider directory with fs.watch and writes each receipt as soon as
 * a provider file changes — every pair of the provider at once, the burst a real cycle makes.
 */
import { execFile } from 'node:child_process';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import path from 'node:path';
import { formatReceipt, parseReceipt, RECEIPTS_DIR, secretDigest } from '../../../src/mesh/digest.js';
import type { Sshd } from '../../helpers/sshd.js';
import { BIN, type BenchContext } from './context.js';
import { runTree } from './process-tree-cpu.js';

export const FLEET_PROVIDER = 'pg-main';

export interface BatonRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** baton's pid while it ran (for sampling its children). */
  readonly pid: number | undefined;
}

export interface Fleet {
  readonly root: string;
  readonly machines: readonly string[];
  readonly config: string;
  readonly inventory: string;
  readonly state: string;
  readonly providesDir: string;
  meshOf(machine: string): string;
  /** The built CLI on this fleet's state dir; never rejects on an exit code (the caller reads it). */
  baton(
    args: readonly string[],
    options?: { readonly onSpawn?: (pid: number) => void; readonly env?: NodeJS.ProcessEnv },
  ): Promise<BatonRun>;
  /** The same argv as `baton` would run, for a wrapper (process-tree-cpu.ts) to start. */
  batonArgv(args: readonly string[]): string[];
}

export function makeFleet(ctx: BenchContext, sshd: Sshd, n: number, prefix: string): Fleet {
  const root = ctx.tempDir(`${prefix}-${n}`);
  const machines = Array.from({ length: n }, (_, i) =>
    i === 0 ? 'db1' : `m${String(i + 1).padStart(3, '0')}`,
  );
  const meshOf = (m: string) => path.join(root, 'machines', m, 'mesh');
  const config = path.join(root, 'ssh_config');
  writeFileSync(
    config,
    machines
      .map(
        (m) =>
          `Host ${m}\n  HostName 127.0.0.1\n  Port ${sshd.port}\n  User ${sshd.user}\n  IdentityFile ${sshd.identity}\n  IdentitiesOnly yes\n  UserKnownHostsFile ${sshd.knownHosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n`,
      )
      .join(''),
  );
  const inventory = path.join(root, 'mesh.yaml');
  writeFileSync(
    inventory,
    [
      `ssh: { config: ${config}, connect_timeout: 30 }`,
      'machines:',
      ...machines.map((m) => `  - { name: ${m}, address: ${m}, transport: ssh, mesh_dir: ${meshOf(m)} }`),
      'providers:',
      `  - { name: ${FLEET_PROVIDER}, machine: db1, kind: postgres }`,
      'consumers:',
      ...machines
        .slice(1)
        .map(
          (m) => `  - { name: app-${m}, machine: ${m}, reads: each-connection, uses: [${FLEET_PROVIDER}] }`,
        ),
      '',
    ].join('\n'),
  );
  const state = path.join(root, 'state');
  const providesDir = path.join(meshOf('db1'), 'provides', FLEET_PROVIDER);
  mkdirSync(providesDir, { recursive: true });
  // BATON_BENCH_CPU_PROF=<dir>: every baton run of the fleet writes a V8 CPU profile there
  // (open it in Chrome's DevTools or speedscope) — where a rotation's controller CPU goes.
  const profile = process.env['BATON_BENCH_CPU_PROF'];
  const profiling = profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profile)}`] : [];
  const batonArgv = (args: readonly string[]) => [
    process.execPath,
    ...profiling,
    BIN,
    '--state-dir',
    state,
    ...args,
  ];
  return {
    root,
    machines,
    config,
    inventory,
    state,
    providesDir,
    meshOf,
    batonArgv,
    baton: (args, options = {}) =>
      new Promise((resolve) => {
        const [file, ...argv] = batonArgv(args);
        const child = execFile(
          file!,
          argv,
          {
            cwd: root,
            env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '', ...options.env },
            maxBuffer: 64 * 1024 * 1024,
          },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
            resolve({ exitCode: code, stdout, stderr, pid: child.pid });
          },
        );
        if (child.pid !== undefined) options.onSpawn?.(child.pid);
      }),
  };
}

/** The rotation id a `mesh rotate` printed, and each pair's window (ms) from the journal's applied record. */
export function windowsOf(fleet: Fleet, stdout: string): number[] {
  const rotation = /\(rotation (\S+?)\)/.exec(stdout)?.[1];
  const records = readFileSync(path.join(fleet.state, 'mesh-journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; phase: string; windows_ms?: Record<string, number> });
  return Object.values(records.find((r) => r.id === rotation && r.phase === 'applied')?.windows_ms ?? {});
}

/** The stand-in provisioner: a receipt for each provider file that changed, written at once. */
export function followProvider(providesDir: string): { stop(): void } {
  const applied = path.join(providesDir, RECEIPTS_DIR);
  mkdirSync(applied, { recursive: true, mode: 0o700 });
  const tick = () => {
    for (const role of readdirSync(providesDir)) {
      if (role.startsWith('.') || role.includes('.next')) continue;
      let secret: Buffer;
      try {
        secret = readFileSync(path.join(providesDir, role));
      } catch {
        continue;
      }
      const digest = secretDigest(secret);
      const receipt = path.join(applied, role);
      let current: string | undefined;
      try {
        current = parseReceipt(readFileSync(receipt, 'utf8'))?.digest;
      } catch {
        current = undefined;
      }
      if (current === digest) continue;
      const tmp = path.join(applied, `.${role}.tmp`);
      writeFileSync(tmp, formatReceipt({ role, digest, applied_at: new Date().toISOString() }), {
        mode: 0o600,
      });
      renameSync(tmp, receipt);
    }
  };
  let watcher: FSWatcher | undefined;
  let queued = false;
  const onChange = () => {
    if (queued) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      tick();
    });
  };
  watcher = watch(providesDir, onChange);
  // A backstop for an event fs.watch coalesced away.
  const timer = setInterval(onChange, 200);
  return {
    stop: () => {
      clearInterval(timer);
      watcher?.close();
      watcher = undefined;
    },
  };
}

/** `sh -c` as a promise that rejects with its stderr on a non-zero exit. */
export function sh(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', script], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${script.slice(0, 200)}: ${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

/**
 * The fleet's rotation floor: per machine one ControlMaster handshake and four sessions, `xargs
 * -P <concurrency>`, the same for the fleet case and fleet-rotation-ab so their ratios mean one
 * thing. Timed inside the tree (the masters' exit after it is not the floor's time, but their CPU
 * is counted).
 */
export function rotationFloor(
  fleet: Pick<Fleet, 'root' | 'config' | 'machines'>,
  concurrency: number,
): () => Promise<{ ms: number; cpuMs: number }> {
  const list = path.join(fleet.root, 'machines.txt');
  writeFileSync(list, fleet.machines.map((m) => `${m}\n`).join(''));
  const controlDir = path.join(fleet.root, 'cm');
  mkdirSync(controlDir, { recursive: true, mode: 0o700 });
  const mux = `-o ControlMaster=auto -o ControlPath=${controlDir}/%n -o ControlPersist=60`;
  return async () => {
    const run = await runTree(
      [
        'sh',
        '-c',
        `s=$(date +%s%N); xargs -P ${concurrency} -I{} sh -c 'for i in 1 2 3 4; do ssh -F ${fleet.config} ${mux} -T {} true || exit 1; done' < ${list}; rc=$?; e=$(date +%s%N); xargs -P ${concurrency} -I{} ssh -F ${fleet.config} ${mux} -O exit {} < ${list} 2>/dev/null; echo $((e - s)); exit $rc`,
      ],
      { cwd: fleet.root },
    );
    if (run.exitCode !== 0) throw new Error(`the rotation floor exited ${run.exitCode}: ${run.stderr}`);
    return { ms: Number(run.stdout.trim().split('\n').pop()) / 1e6, cpuMs: run.cpuMs };
  };
}
