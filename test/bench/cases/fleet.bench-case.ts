/**
 * A fleet on one loopback sshd (sshd's default MaxStartups and MaxSessions): N = 10, 50, 200
 * machines, each its own ssh_config alias (so its own connection) and its own mesh_dir; db1
 * provides pg-main, every other machine consumes it. At each N, measured in the same run:
 * - `mesh status` (whole CLI) against the floor: `xargs -P 8` running one `ssh <alias> cat
 *   <its files>` per machine (one handshake and one session each);
 * - a provider-wide rotation (`mesh rotate --provider --yes`, whole CLI) against the floor of
 *   the same round trips in plain ssh: per machine one ControlMaster handshake and four
 *   sessions (`xargs -P 8`);
 * - the window of every pair (receipt's applied_at → consumer rename, from the journal),
 *   median and max;
 * - the CPU of the provider's receipt watcher (its processes' utime+stime from /proc, over
 *   its lifetime), as a share of one core.
 * The provisioner is a stand-in on db1 in this process: it follows db1's provider directory
 * with fs.watch and writes each receipt as soon as a provider file changes — every pair of
 * the provider at once, the burst a real provisioner's cycle makes.
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
import { promisify } from 'node:util';
import { formatReceipt, parseReceipt, RECEIPTS_DIR, secretDigest } from '../../../src/mesh/digest.js';
import { sshdUnavailable, startSshd, type Sshd } from '../../helpers/sshd.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure, type Figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const PROVIDER = 'pg-main';
// BATON_BENCH_FLEET_SIZES=200 (comma-separated) measures only those sizes: a probe of one N
// without the half hour of the others.
const SIZES: readonly number[] = process.env['BATON_BENCH_FLEET_SIZES']
  ? process.env['BATON_BENCH_FLEET_SIZES'].split(',').map(Number)
  : [10, 50, 200];
const CONCURRENCY = 8;
const run = promisify(execFile);

/** The stand-in provisioner: a receipt for each provider file that changed, written at once. */
function followProvider(providesDir: string): { stop(): void } {
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

/** CPU (ms) and lifetime (ms) of the processes whose command line names `marker`, sampled from /proc. */
function sampleWatchers(marker: string): { stop(): { cpuMs: number; lifeMs: number; processes: number } } {
  const tick = 100; // USER_HZ on Linux
  const seen = new Map<number, { first: number; last: number; cpu: number }>();
  const sample = () => {
    const now = performance.now();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
        // The watcher is the remote shell (and perl) started by sshd with WATCH's arguments.
        if (!cmd.includes(marker) || cmd.includes('ssh\0')) continue;
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const cpu = ((Number(fields[11]) + Number(fields[12])) * 1000) / tick;
        const pid = Number(name);
        const entry = seen.get(pid);
        if (entry) {
          entry.last = now;
          entry.cpu = cpu;
        } else seen.set(pid, { first: now, last: now, cpu });
      } catch {
        // gone
      }
    }
  };
  const timer = setInterval(sample, 50);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      const entries = [...seen.values()];
      const cpuMs = entries.reduce((a, e) => a + e.cpu, 0);
      const lifeMs = entries.length
        ? Math.max(...entries.map((e) => e.last)) - Math.min(...entries.map((e) => e.first))
        : 0;
      return { cpuMs, lifeMs, processes: entries.length };
    },
  };
}

export const fleetCase: BenchCase = {
  name: 'fleet',
  async run(ctx) {
    const unavailable = sshdUnavailable();
    if (unavailable)
      return {
        figures: [],
        skipped: [{ id: 'fleet', title: 'A fleet on one loopback sshd', reason: unavailable }],
      };
    const figures: Figure[] = [];
    let sshd: Sshd | undefined;
    let provisioner: { stop(): void } | undefined;
    try {
      // sshd's own defaults (MaxStartups 10:30:100, MaxSessions 10): the limits a fleet meets.
      sshd = await startSshd({ settings: { MaxStartups: undefined } });
      for (const n of SIZES) {
        const root = ctx.tempDir(`fleet-${n}`);
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
                `Host ${m}\n  HostName 127.0.0.1\n  Port ${sshd!.port}\n  User ${sshd!.user}\n  IdentityFile ${sshd!.identity}\n  IdentitiesOnly yes\n  UserKnownHostsFile ${sshd!.knownHosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n`,
            )
            .join(''),
        );
        const inventory = path.join(root, 'mesh.yaml');
        writeFileSync(
          inventory,
          [
            `ssh: { config: ${config}, connect_timeout: 30 }`,
            'machines:',
            ...machines.map(
              (m) => `  - { name: ${m}, address: ${m}, transport: ssh, mesh_dir: ${meshOf(m)} }`,
            ),
            'providers:',
            `  - { name: ${PROVIDER}, machine: db1, kind: postgres }`,
            'consumers:',
            ...machines
              .slice(1)
              .map(
                (m) => `  - { name: app-${m}, machine: ${m}, reads: each-connection, uses: [${PROVIDER}] }`,
              ),
            '',
          ].join('\n'),
        );
        const state = path.join(root, 'state');
        const baton = (...args: string[]) =>
          run(process.execPath, [BIN, '--state-dir', state, ...args], {
            cwd: root,
            env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
            maxBuffer: 64 * 1024 * 1024,
          });
        const providesDir = path.join(meshOf('db1'), 'provides', PROVIDER);
        mkdirSync(providesDir, { recursive: true });
        provisioner?.stop();
        provisioner = followProvider(providesDir);
        const windowsOf = (stdout: string) => {
          const rotation = /\(rotation (\S+?)\)/.exec(stdout)?.[1];
          const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { id: string; phase: string; windows_ms?: Record<string, number> });
          return Object.values(
            records.find((r) => r.id === rotation && r.phase === 'applied')?.windows_ms ?? {},
          );
        };
        const rotate = async () => {
          const watcher = sampleWatchers(path.join(providesDir, RECEIPTS_DIR));
          const started = performance.now();
          const { stdout } = await baton(
            'mesh',
            'rotate',
            '--provider',
            PROVIDER,
            '--inventory',
            inventory,
            '--yes',
            '--wait',
            '120',
            '--timeout',
            '60',
          );
          const ms = performance.now() - started;
          const cpu = watcher.stop();
          const windows = windowsOf(stdout);
          if (windows.length !== n - 1)
            throw new Error(
              `fleet ${n}: the rotation applied ${windows.length} of ${n - 1} pairs: ${stdout.slice(-2000)}`,
            );
          return { ms, windows, cpu };
        };
        ctx.log(`fleet: ${n} machines — a first rotation (creates every file)`);
        await rotate();

        // The floors: the same machines in plain ssh, `xargs -P 8`.
        const list = path.join(root, 'machines.txt');
        writeFileSync(list, machines.map((m) => `${m}\n`).join(''));
        const files = (m: string) =>
          m === 'db1'
            ? `${providesDir}/* ${providesDir}/${RECEIPTS_DIR}/*`
            : `${path.join(meshOf(m), 'consumes', PROVIDER)}/*`;
        // One command per machine, run by xargs as the fleet's floor (globs expand on the machine).
        const floorList = path.join(root, 'floor-status.txt');
        writeFileSync(
          floorList,
          machines.map((m) => `ssh -F ${config} -T ${m} 'cat ${files(m)}' >/dev/null\n`).join(''),
        );
        const statusFloor = async () => {
          const started = performance.now();
          await run('sh', ['-c', `xargs -P ${CONCURRENCY} -d '\\n' -I{} sh -c '{}' < ${floorList}`]);
          return performance.now() - started;
        };
        const controlDir = path.join(root, 'cm');
        mkdirSync(controlDir, { mode: 0o700 });
        const rotationFloor = async () => {
          const mux = `-o ControlMaster=auto -o ControlPath=${controlDir}/%n -o ControlPersist=60`;
          const started = performance.now();
          await run('sh', [
            '-c',
            `xargs -P ${CONCURRENCY} -I{} sh -c 'for i in 1 2 3 4; do ssh -F ${config} ${mux} -T {} true || exit 1; done' < ${list}`,
          ]);
          const ms = performance.now() - started;
          await run('sh', [
            '-c',
            `xargs -P ${CONCURRENCY} -I{} ssh -F ${config} ${mux} -O exit {} < ${list} 2>/dev/null || true`,
          ]);
          return ms;
        };
        const statusRuns: number[] = [];
        const statusFloors: number[] = [];
        for (let i = 0; i < 3; i++) {
          ctx.log(`fleet: ${n} machines — mesh status ${i + 1} of 3, and its floor`);
          const started = performance.now();
          await baton('mesh', 'status', '--provider', PROVIDER, '--inventory', inventory, '--timeout', '60');
          statusRuns.push(performance.now() - started);
          statusFloors.push(await statusFloor());
        }
        const rotations: Awaited<ReturnType<typeof rotate>>[] = [];
        const rotationFloors: number[] = [];
        for (let i = 0; i < 2; i++) {
          ctx.log(`fleet: ${n} machines — provider-wide rotation ${i + 1} of 2, and its floor`);
          rotations.push(await rotate());
          rotationFloors.push(await rotationFloor());
        }
        const st = summarize(statusRuns);
        const sf = summarize(statusFloors);
        const rt = summarize(rotations.map((r) => r.ms));
        const rf = summarize(rotationFloors);
        const windows = summarize(rotations.flatMap((r) => r.windows));
        const cpuMs = rotations.reduce((a, r) => a + r.cpu.cpuMs, 0);
        const lifeMs = rotations.reduce((a, r) => a + r.cpu.lifeMs, 0);
        const share = lifeMs > 0 ? (100 * cpuMs) / lifeMs : 0;
        figures.push(
          figure({
            id: `fleet.status-${n}`,
            title: `Fleet of ${n}: mesh status over ${n} machines on one loopback sshd (median of 3, whole CLI)`,
            measured: {
              label: `baton mesh status, ${n - 1} pairs`,
              value: st.median,
              unit: 'ms',
              summary: st,
            },
            baseline: {
              label: `xargs -P ${CONCURRENCY} ssh <alias> cat <its files>, one per machine`,
              value: sf.median,
              unit: 'ms',
              summary: sf,
            },
            goal: { kind: 'ratio', max: 1.3 },
            notes: [
              `each machine its own ssh_config alias and connection; --concurrency ${CONCURRENCY} (default)`,
            ],
          }),
          figure({
            id: `fleet.rotation-${n}`,
            title: `Fleet of ${n}: provider-wide rotation, ${n - 1} pairs (median of 2, whole CLI)`,
            measured: {
              label: `baton mesh rotate --provider --yes`,
              value: rt.median,
              unit: 'ms',
              summary: rt,
            },
            baseline: {
              label: `xargs -P ${CONCURRENCY}: per machine one ControlMaster handshake and 4 sessions`,
              value: rf.median,
              unit: 'ms',
              summary: rf,
            },
            goal: { kind: 'ratio', max: 1.3 },
            notes: [
              'the stand-in provisioner writes every receipt as soon as the provider files change',
              // What the rotation costs each machine in ssh (src/operations/rotate.ts, rotation-run-effect.ts):
              // the protocol's minimum — one read (the resolve), one write, one channel for the rename.
              'ssh per consumer machine: 1 handshake, 3 sessions (the digest/leftover read that is the resolve, the stage, the rename channel) and 2 round trips on the channel (its clock, the rename); on db1: the handshake, the lock, the read, the stage, 4 record writes (preparing, prepared, committing, finished), the keep, the discard, the receipt watcher and the channel (its clock, then the provider renames)',
            ],
          }),
          figure({
            id: `fleet.window-${n}`,
            title: `Fleet of ${n}: window per pair, receipt → consumer rename (median over ${windows.n} pairs of 2 rotations)`,
            measured: {
              label: 'applied_at → consumer end renamed',
              value: windows.median,
              unit: 'ms',
              summary: windows,
            },
            goal: { kind: 'absolute', max: 50, unit: 'ms' },
            notes: [
              `max ${windows.max.toFixed(0)} ms (goal ≤ 200 ms); windows per rotation: ${rotations.map((r) => `median ${summarize(r.windows).median.toFixed(0)} / max ${summarize(r.windows).max.toFixed(0)} ms`).join('; ')}`,
            ],
          }),
          figure({
            id: `fleet.watcher-cpu-${n}`,
            title: `Fleet of ${n}: the provider's receipt watcher, CPU over its lifetime (2 rotations)`,
            measured: { label: 'utime+stime of the watcher processes on db1', value: cpuMs, unit: 'ms CPU' },
            goal: { kind: 'none' },
            notes: [
              `${share.toFixed(1)}% of one core over ${(lifeMs / 1000).toFixed(1)} s of watching (goal ≤ 5%); ${rotations.map((r) => r.cpu.processes).join(' + ')} processes`,
            ],
          }),
        );
      }
      return { figures, skipped: [] };
    } finally {
      provisioner?.stop();
      await sshd?.stop();
    }
  },
};
