/**
 * The mesh over a network with a round trip: every ssh goes through ProxyCommand to a relay
 * that holds each chunk 25 ms each way (50 ms round trip) to a real sshd on loopback, against
 * a real PostgreSQL (the embedded sandbox) and the real provisioner (`--interval 0.5`) on db1.
 * - Window per pair over ssh: 10 rotations of one pair (`mesh rotate --pair --yes`, the built
 *   CLI), read from the journal's `windows_ms`, while an app re-reads its password file for
 *   every connection every 50 ms (its failed logins per rotation are in the notes); the
 *   baseline is the same pair over the local transport (5 rotations, same files, same
 *   provisioner: the local machines' root is `/` and their mesh_dir the same directories).
 * - `mesh status` and a provider-wide rotation over 20 machines, each its own sshd port (its
 *   own connection; two sshd of 10 ports) behind the same relay, each its own mesh_dir.
 */
import type { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startPostgres } from '../../../src/sandbox/postgres.js';
import { startPasswordApp } from '../../helpers/password-app.js';
import { delayedSshConfig, sshdUnavailable, startSshd, type Sshd } from '../../helpers/sshd.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { seedAndWatch } from '../lib/rotation-mesh.js';
import { summarize } from '../lib/stats.js';

const PROVIDER = 'pg-main';
const SSH_ROTATIONS = 10;
const LOCAL_ROTATIONS = 5;
const CONNECT_ROTATIONS = 5;
const MACHINES = 20;
const ONE_WAY_MS = 25;
const run = promisify(execFile);

export const sshWindowCase: BenchCase = {
  name: 'ssh-window',
  async run(ctx) {
    const id = 'rotation.window-ssh';
    const title = `Rotation window per pair over ssh at ${2 * ONE_WAY_MS} ms RTT`;
    const unavailable = sshdUnavailable();
    if (unavailable) return { figures: [], skipped: [{ id, title, reason: unavailable }] };
    ctx.log(
      'ssh-window: starting two sshd (10 ports each: sshd listens on at most 16) and the sandbox PostgreSQL',
    );
    const servers: Sshd[] = [];
    const pg = await startPostgres();
    const root = ctx.tempDir('ssh-window');
    let provisioner: ReturnType<typeof spawn> | undefined;
    try {
      for (let i = 0; i < 2; i++) servers.push(await startSshd({ extraPorts: MACHINES / 2 - 1 }));
      const targets = servers.flatMap((sshd) => sshd.ports.map((port) => ({ sshd, port })));
      const config = delayedSshConfig(root, ONE_WAY_MS, path.join(root, 'relay.log'));
      const meshOf = (m: string) => path.join(root, 'machines', m, 'mesh');
      const superuser = `su_${randomBytes(3).toString('hex')}`;
      const names = [
        'db1',
        'web1',
        ...Array.from({ length: MACHINES - 2 }, (_, i) => `m${String(i + 3).padStart(2, '0')}`),
      ];
      const consumerOf = (m: string) => (m === 'web1' ? 'web1-app' : `app-${m}`);
      /** app-truth: `connect:` on the provider and a `reload:` (a no-op) on web1-app, for the app's part. */
      const inventory = (
        file: string,
        transport: 'ssh' | 'local',
        machines: readonly string[],
        app: { readonly connect?: boolean; readonly reload?: boolean } = {},
      ) => {
        writeFileSync(
          path.join(root, file),
          [
            `ssh: { strict_host_key_checking: "yes", config: ${config}, connect_timeout: 30 }`,
            'machines:',
            ...machines.map((m, i) =>
              transport === 'ssh'
                ? `  - { name: ${m}, address: "${targets[i]!.sshd.user}@127.0.0.1:${targets[i]!.port}", transport: ssh, mesh_dir: ${meshOf(m)}, identity: ${targets[i]!.sshd.identity}, known_hosts: ${targets[i]!.sshd.knownHosts} }`
                : `  - { name: ${m}, address: /, transport: local, mesh_dir: ${meshOf(m)} }`,
            ),
            'providers:',
            `  - { name: ${PROVIDER}, machine: db1, kind: postgres${app.connect ? `, connect: { host: ${pg.host}, port: ${pg.port}, database: postgres }` : ''} }`,
            'consumers:',
            `  - { name: provisioner, machine: db1, uses: [${PROVIDER}], role: ${superuser} }`,
            ...machines
              .slice(1)
              .map(
                (m) =>
                  `  - { name: ${consumerOf(m)}, machine: ${m}, uses: [${PROVIDER}]${app.reload && m === 'web1' ? ", reload: 'true'" : ''} }`,
              ),
            '',
          ].join('\n'),
        );
        return path.join(root, file);
      };
      const pairSsh = inventory('pair-ssh.yaml', 'ssh', names.slice(0, 2));
      const pairLocal = inventory('pair-local.yaml', 'local', names.slice(0, 2));
      const pairConnect = inventory('pair-ssh-connect.yaml', 'ssh', names.slice(0, 2), {
        connect: true,
        reload: true,
      });
      const wide = inventory('wide.yaml', 'ssh', names);
      const state = path.join(root, 'state');
      const baton = (...args: string[]) =>
        run(process.execPath, [BIN, '--state-dir', state, ...args], {
          cwd: root,
          env: { ...process.env, NO_COLOR: '1' },
          maxBuffer: 16 * 1024 * 1024,
        });

      // The provisioner's superuser, seeded into the mesh (`baton mesh seed`), and the provisioner watching db1.
      provisioner = await seedAndWatch(pg, {
        root,
        superuser,
        inventory: pairSsh,
        meshDb1: meshOf('db1'),
        intervalSeconds: 0.5,
        baton,
      });

      const windowOf = (stdout: string) => {
        const rotation = /\(rotation (\S+?)\)/.exec(stdout)?.[1];
        const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { id: string; phase: string; windows_ms?: Record<string, number> });
        return records.find((r) => r.id === rotation && r.phase === 'applied')?.windows_ms ?? {};
      };
      let lastRotationMs = 0;
      const rotatePair = async (inv: string) => {
        const began = performance.now();
        const { stdout } = await baton(
          'mesh',
          'rotate',
          '--pair',
          `${PROVIDER}:web1-app`,
          '--inventory',
          inv,
          '--yes',
          '--wait',
          '20',
        );
        lastRotationMs = performance.now() - began;
        const ms = windowOf(stdout)[`${PROVIDER}:web1-app`];
        if (typeof ms !== 'number') throw new Error(`the rotation recorded no window: ${stdout}`);
        return ms;
      };

      await rotatePair(pairSsh); // creates the role
      const consumerFile = path.join(meshOf('web1'), 'consumes', PROVIDER, 'web1_app');
      const app = startPasswordApp(pg, () => consumerFile, 'web1_app');
      const sshWindows: number[] = [];
      const sshWalls: number[] = [];
      const failedLogins: number[] = [];
      for (let i = 0; i < SSH_ROTATIONS; i++) {
        ctx.log(`ssh-window: ssh rotation ${i + 1} of ${SSH_ROTATIONS}`);
        const from = app.attempts.length;
        sshWindows.push(await rotatePair(pairSsh));
        sshWalls.push(lastRotationMs);
        // The app's attempts up to its first success with the new password belong to this rotation.
        const fresh = readFileSync(consumerFile, 'utf8');
        while (!app.attempts.slice(from).some((a) => a.ok && a.password === fresh))
          await new Promise((r) => setTimeout(r, 50));
        failedLogins.push(app.attempts.slice(from).filter((a) => !a.ok).length);
      }
      // app-truth: the same pair with `connect:` (a test login from web1 through its ssh connection,
      // inside a single pair's window) and a `reload:` on web1 (after the window).
      const connectWindows: number[] = [];
      const connectWalls: number[] = [];
      for (let i = 0; i < CONNECT_ROTATIONS; i++) {
        ctx.log(`ssh-window: ssh rotation with connect: and reload: ${i + 1} of ${CONNECT_ROTATIONS}`);
        connectWindows.push(await rotatePair(pairConnect));
        connectWalls.push(lastRotationMs);
      }
      const localWindows: number[] = [];
      for (let i = 0; i < LOCAL_ROTATIONS; i++) {
        ctx.log(`ssh-window: local rotation ${i + 1} of ${LOCAL_ROTATIONS}`);
        localWindows.push(await rotatePair(pairLocal));
      }
      await app.stop();
      // In the log as soon as they are known: a later part of the case that fails keeps them.
      ctx.log(
        `ssh-window: windows over ssh ${sshWindows.map((x) => x.toFixed(0)).join(', ')} ms; with connect: ${connectWindows.map((x) => x.toFixed(0)).join(', ')} ms; local ${localWindows.map((x) => x.toFixed(0)).join(', ')} ms; failed logins ${failedLogins.join(', ')}`,
      );

      ctx.log(`ssh-window: mesh status over ${MACHINES} machines`);
      const statusMs: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await baton('mesh', 'status', '--inventory', wide).catch(
          (error: { code?: number; stdout?: string; stderr?: string }) => {
            // Exit 3 (pending, or never rotated) is an answer; anything else is not — and says
            // why in its own last lines (a machine unreachable under load), kept in the error.
            if (error.code !== 3)
              throw new Error(
                `mesh status over ${MACHINES} machines exited ${error.code}: ${`${error.stdout ?? ''}${error.stderr ?? ''}`.trim().split('\n').slice(-6).join(' | ')}`,
              );
          },
        );
        statusMs.push(performance.now() - started);
      }
      ctx.log(`ssh-window: a provider-wide rotation over ${MACHINES} machines`);
      const started = performance.now();
      const { stdout } = await baton(
        'mesh',
        'rotate',
        '--provider',
        PROVIDER,
        '--inventory',
        wide,
        '--yes',
        '--wait',
        '30',
      );
      const wideMs = performance.now() - started;
      const wideWindows = Object.values(windowOf(stdout));
      if (wideWindows.length !== MACHINES)
        throw new Error(
          `the provider-wide rotation applied ${wideWindows.length} of ${MACHINES} pairs: ${stdout}`,
        );

      const s = summarize(sshWindows);
      const c = summarize(connectWindows);
      const sw = summarize(sshWalls);
      const cw = summarize(connectWalls);
      const l = summarize(localWindows);
      const st = summarize(statusMs);
      const w = summarize(wideWindows);
      const rtt = `ProxyCommand relay, ${ONE_WAY_MS} ms each way, sshd on 127.0.0.1`;
      return {
        figures: [
          figure({
            id,
            title: `${title} (median of ${SSH_ROTATIONS} rotations)`,
            measured: {
              label: `mesh rotate --pair over ssh, ${rtt}`,
              value: s.median,
              unit: 'ms',
              summary: s,
            },
            baseline: {
              label: `the same pair on the local transport (median of ${LOCAL_ROTATIONS})`,
              value: l.median,
              unit: 'ms',
              summary: l,
            },
            goal: { kind: 'absolute', max: 100, unit: 'ms' },
            notes: [
              `ssh windows ${sshWindows.map((x) => x.toFixed(0)).join(', ')} ms; local ${localWindows.map((x) => x.toFixed(0)).join(', ')} ms`,
              `an app connecting every 50 ms, re-reading its file: failed logins per rotation ${failedLogins.join(', ')} (goal ≤ 2)`,
              'real PostgreSQL (embedded), provisioner --interval 0.5, receipts read on the provider every 10 ms',
            ],
          }),
          figure({
            id: 'rotation.window-ssh-connect',
            title: `Rotation window per pair over ssh at ${2 * ONE_WAY_MS} ms RTT with connect: and reload: (median of ${CONNECT_ROTATIONS})`,
            measured: {
              label: `mesh rotate --pair over ssh, a test login from web1 (ssh -W) before the rename, reload: true after`,
              value: c.median,
              unit: 'ms',
              summary: c,
            },
            baseline: {
              label: `the same pair over ssh without connect: or reload: (median of ${SSH_ROTATIONS})`,
              value: s.median,
              unit: 'ms',
              summary: s,
            },
            goal: { kind: 'absolute', max: s.median + 4 * 2 * ONE_WAY_MS, unit: 'ms' },
            notes: [
              `windows with connect: ${connectWindows.map((x) => x.toFixed(0)).join(', ')} ms`,
              `whole rotation (CLI, wall): without ${sw.median.toFixed(0)} ms, with connect: and reload: ${cw.median.toFixed(0)} ms (median)`,
              'the test login is a stream on the shared connection (one channel open) plus the PostgreSQL startup and SCRAM exchange (3 round trips) through it; the reload is one ssh session after the window',
            ],
          }),
          figure({
            id: 'mesh.status-ssh-20',
            title: `mesh status over ${MACHINES} ssh machines at ${2 * ONE_WAY_MS} ms RTT (median of 3, whole CLI)`,
            measured: {
              label: `baton mesh status, ${MACHINES} machines, ${MACHINES} pairs`,
              value: st.median,
              unit: 'ms',
              summary: st,
            },
            goal: { kind: 'none' },
            notes: [`each machine its own sshd port and connection; ${rtt}`],
          }),
          figure({
            id: 'rotation.provider-wide-ssh-20',
            title: `Provider-wide rotation over ${MACHINES} ssh machines at ${2 * ONE_WAY_MS} ms RTT (whole CLI)`,
            measured: {
              label: `baton mesh rotate --provider --yes, ${MACHINES} pairs`,
              value: wideMs,
              unit: 'ms',
            },
            goal: { kind: 'none' },
            notes: [
              `its windows: median ${w.median.toFixed(0)} ms, max ${w.max.toFixed(0)} ms over ${MACHINES} pairs`,
              'includes the provisioner applying 20 roles at --interval 0.5',
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      provisioner?.kill('SIGTERM');
      await Promise.all([...servers.map((sshd) => sshd.stop()), pg.destroy()]);
    }
  },
};
