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
 * BATON_BENCH_STATUS_AB=<another build's bin/baton.js>: `mesh status` over the 20 runs 8 turns
 * of both builds, in turns (alternating which goes first), and the figure compares them.
 * BATON_BENCH_BEFORE_READS=1 (with BATON_BENCH_BIN): a build from before the inventory's `reads:`
 * (round 6's b4ed335: issue 43's "before", docs/benchmarks.md round 14) gets inventories without it.
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
import { figure, type Figure } from '../lib/figure.js';
import { seedAndWatch } from '../lib/rotation-mesh.js';
import { summarize } from '../lib/stats.js';

const PROVIDER = 'pg-main';
const SSH_ROTATIONS = 10;
const LOCAL_ROTATIONS = 5;
const CONNECT_ROTATIONS = 5;
const MACHINES = 20;
const ONE_WAY_MS = 25;
const run = promisify(execFile);
/** `reads: <mode>, ` as the inventory says it, or nothing for a build that predates it. */
const reads = (mode: string) => (process.env['BATON_BENCH_BEFORE_READS'] === '1' ? '' : `reads: ${mode}, `);

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
            `  - { name: provisioner, machine: db1, ${reads('each-connection')}uses: [${PROVIDER}], role: ${superuser} }`,
            ...machines
              .slice(1)
              .map(
                (m) =>
                  `  - { name: ${consumerOf(m)}, machine: ${m}, ${app.reload && m === 'web1' ? `${reads('once')}reload: 'true', ` : reads('each-connection')}uses: [${PROVIDER}] }`,
              ),
            '',
          ].join('\n'),
        );
        return path.join(root, file);
      };
      const pairSsh = inventory('pair-ssh.yaml', 'ssh', names.slice(0, 2));
      const pairLocal = inventory('pair-local.yaml', 'local', names.slice(0, 2));
      // app-truth: the same pair with `connect:` (a test login from web1), with `reload: 'true'` on
      // web1, and with both — taken in turns with the plain pair, in the same run.
      const variants = [
        {
          name: 'connect:',
          file: inventory('pair-ssh-connect.yaml', 'ssh', names.slice(0, 2), { connect: true }),
        },
        {
          name: 'reload:',
          file: inventory('pair-ssh-reload.yaml', 'ssh', names.slice(0, 2), { reload: true }),
        },
        {
          name: 'connect: and reload:',
          file: inventory('pair-ssh-both.yaml', 'ssh', names.slice(0, 2), { connect: true, reload: true }),
        },
      ];
      const wide = inventory('wide.yaml', 'ssh', names);
      const state = path.join(root, 'state');
      // A failed command says why in its own last lines (the error alone names only the argv).
      const batonOf =
        (bin: string) =>
        (...args: string[]) =>
          run(process.execPath, [bin, '--state-dir', state, ...args], {
            cwd: root,
            env: { ...process.env, NO_COLOR: '1' },
            maxBuffer: 16 * 1024 * 1024,
          }).catch((error: Error & { stdout?: string; stderr?: string }) => {
            const said = `${error.stdout ?? ''}${error.stderr ?? ''}`
              .trim()
              .split('\n')
              .slice(-8)
              .join(' | ');
            throw Object.assign(new Error(`${error.message.split('\n')[0]!}: ${said}`), error);
          });
      const baton = batonOf(BIN);

      // The provisioner's superuser, seeded into the mesh (`baton mesh seed`), and the provisioner watching db1.
      provisioner = await seedAndWatch(pg, {
        root,
        superuser,
        inventory: pairSsh,
        meshDb1: meshOf('db1'),
        intervalSeconds: 0.5,
        baton,
      });

      type JournalLine = {
        id: string;
        phase: string;
        windows_ms?: Record<string, number>;
        test_logins?: { ms: number; ok: boolean; round_trips?: number; renamed_with_login?: boolean }[];
        reloads?: { durationMs: number; result: string }[];
      };
      const recordsOf = (stdout: string) => {
        const rotation = /\(rotation (\S+?)\)/.exec(stdout)?.[1];
        return readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as JournalLine)
          .filter((r) => r.id === rotation);
      };
      const windowOf = (stdout: string) =>
        recordsOf(stdout).find((r) => r.phase === 'applied')?.windows_ms ?? {};
      /** app-truth: the test login's own time and SCRAM round trips, and the reload's time, from the journal. */
      let lastApp: { loginMs?: number; loginTrips?: number; reloadMs?: number; armed?: boolean } = {};
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
        const records = recordsOf(stdout);
        const login = records.flatMap((r) => r.test_logins ?? [])[0];
        const reload = records.flatMap((r) => r.reloads ?? [])[0];
        if (login && !login.ok) throw new Error(`the test login was refused: ${stdout}`);
        if (reload && reload.result !== 'ok') throw new Error(`the reload failed: ${stdout}`);
        lastApp = {
          ...(login
            ? {
                loginMs: login.ms,
                ...(login.round_trips ? { loginTrips: login.round_trips } : {}),
                armed: login.renamed_with_login === true,
              }
            : {}),
          ...(reload ? { reloadMs: reload.durationMs } : {}),
        };
        const ms = windowOf(stdout)[`${PROVIDER}:web1-app`];
        if (typeof ms !== 'number') throw new Error(`the rotation recorded no window: ${stdout}`);
        return ms;
      };

      await rotatePair(pairSsh); // creates the role
      const consumerFile = path.join(meshOf('web1'), 'consumes', PROVIDER, 'web1_app');
      const app = startPasswordApp(pg, () => consumerFile, 'web1_app');
      const sshWindows: number[] = [];
      const failedLogins: number[] = [];
      for (let i = 0; i < SSH_ROTATIONS; i++) {
        ctx.log(`ssh-window: ssh rotation ${i + 1} of ${SSH_ROTATIONS}`);
        const from = app.attempts.length;
        sshWindows.push(await rotatePair(pairSsh));
        // The app's attempts up to its first success with the new password belong to this rotation.
        const fresh = readFileSync(consumerFile, 'utf8');
        while (!app.attempts.slice(from).some((a) => a.ok && a.password === fresh))
          await new Promise((r) => setTimeout(r, 50));
        failedLogins.push(app.attempts.slice(from).filter((a) => !a.ok).length);
      }
      type VariantRun = {
        windows: number[];
        walls: number[];
        loginMs: number[];
        loginTrips: number[];
        reloadMs: number[];
        /** app-rtt: rotations whose consumer rename the machine did on the login's own verdict. */
        armed: number;
      };
      const runs = new Map<string, VariantRun>(
        variants.map((v) => [
          v.name,
          { windows: [], walls: [], loginMs: [], loginTrips: [], reloadMs: [], armed: 0 },
        ]),
      );
      const plainWalls: number[] = [];
      const plainWindows: number[] = [];
      for (let i = 0; i < CONNECT_ROTATIONS; i++) {
        plainWindows.push(await rotatePair(pairSsh));
        plainWalls.push(lastRotationMs);
        for (const v of variants) {
          ctx.log(`ssh-window: ssh rotation with ${v.name} ${i + 1} of ${CONNECT_ROTATIONS}`);
          const r = runs.get(v.name)!;
          r.windows.push(await rotatePair(v.file));
          r.walls.push(lastRotationMs);
          if (lastApp.loginMs !== undefined) r.loginMs.push(lastApp.loginMs);
          if (lastApp.loginTrips !== undefined) r.loginTrips.push(lastApp.loginTrips);
          if (lastApp.reloadMs !== undefined) r.reloadMs.push(lastApp.reloadMs);
          if (lastApp.armed) r.armed += 1;
        }
      }
      // In the log as soon as measured: the 20-machine part below may fail under load.
      for (const v of variants) {
        const r = runs.get(v.name)!;
        ctx.log(
          `ssh-window: ${v.name} windows ${r.windows.map((x) => x.toFixed(0)).join(',')} (plain ${plainWindows.map((x) => x.toFixed(0)).join(',')}); walls ${r.walls.map((x) => x.toFixed(0)).join(',')} (plain ${plainWalls.map((x) => x.toFixed(0)).join(',')}); login ms ${r.loginMs.join(',')} trips ${r.loginTrips.join(',')}; reload ms ${r.reloadMs.join(',')}`,
        );
      }
      const localWindows: number[] = [];
      for (let i = 0; i < LOCAL_ROTATIONS; i++) {
        ctx.log(`ssh-window: local rotation ${i + 1} of ${LOCAL_ROTATIONS}`);
        localWindows.push(await rotatePair(pairLocal));
      }
      await app.stop();
      ctx.log(`ssh-window: local windows ${localWindows.map((x) => x.toFixed(0)).join(', ')} ms`);

      // The 20-machine part fails on its own (status timing out at a load of 30+) without losing the pair's figures.
      const fleetPart = await (async () => {
        ctx.log(`ssh-window: mesh status over ${MACHINES} machines`);
        const statusMs: number[] = [];
        const otherMs: number[] = [];
        const other = process.env['BATON_BENCH_STATUS_AB'];
        const turns = (i: number) =>
          other === undefined ? [BIN] : i % 2 === 0 ? [BIN, other] : [other, BIN];
        for (let i = 0; i < (other === undefined ? 3 : 8); i++)
          for (const bin of turns(i)) {
            const started = performance.now();
            await batonOf(bin)('mesh', 'status', '--inventory', wide).catch(
              (error: { code?: number; stdout?: string; stderr?: string }) => {
                // Exit 3 (pending, or never rotated) is an answer; anything else is not — and says
                // why in its own last lines (a machine unreachable under load), kept in the error.
                if (error.code !== 3)
                  throw new Error(
                    `mesh status over ${MACHINES} machines exited ${error.code}: ${`${error.stdout ?? ''}${error.stderr ?? ''}`.trim().split('\n').slice(-6).join(' | ')}`,
                  );
              },
            );
            (bin === BIN ? statusMs : otherMs).push(performance.now() - started);
          }
        if (other !== undefined)
          ctx.log(
            `ssh-window: mesh status A/B: this build ${statusMs.map((x) => x.toFixed(0)).join(',')}; ${other} ${otherMs.map((x) => x.toFixed(0)).join(',')}`,
          );
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
        return { statusMs, otherMs, wideMs, wideWindows };
      })().catch((error: unknown) => ({
        failed: error instanceof Error ? error.message.split('\n')[0]! : String(error),
      }));
      const s = summarize(sshWindows);
      const pw = summarize(plainWindows);
      const pwall = summarize(plainWalls);
      const RTT = 2 * ONE_WAY_MS;
      const trips = (ms: number) => (ms / RTT).toFixed(1);
      const l = summarize(localWindows);
      /** Round trips after the receipt beyond the plain pair's one rename, as the protocol counts them. */
      const protocolTrips = (login: boolean, armed: boolean) => (login ? 2 + (armed ? 0 : 1) : 1) - 1;
      const fleetFigures = (): Figure[] => {
        if ('failed' in fleetPart) return [];
        const { statusMs, otherMs, wideMs, wideWindows } = fleetPart;
        const st = summarize(statusMs);
        const other = otherMs.length > 0 ? summarize(otherMs) : undefined;
        const w = summarize(wideWindows);
        return [
          figure({
            id: 'mesh.status-ssh-20',
            title: `mesh status over ${MACHINES} ssh machines at ${2 * ONE_WAY_MS} ms RTT (median of ${statusMs.length}, whole CLI)`,
            measured: {
              label: `baton mesh status, ${MACHINES} machines, ${MACHINES} pairs`,
              value: st.median,
              unit: 'ms',
              summary: st,
            },
            ...(other
              ? {
                  baseline: {
                    label: `the build BATON_BENCH_STATUS_AB names, in turns (median of ${otherMs.length})`,
                    value: other.median,
                    unit: 'ms',
                    summary: other,
                  },
                }
              : {}),
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
        ];
      };
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
          ...variants.map((v) => {
            const r = runs.get(v.name)!;
            const win = summarize(r.windows);
            const wall = summarize(r.walls);
            const login = r.loginMs.length > 0 ? summarize(r.loginMs) : undefined;
            const reload = r.reloadMs.length > 0 ? summarize(r.reloadMs) : undefined;
            const slug = v.name.replace(/[: ]+/g, '-').replace(/-+$/, '');
            return figure({
              id: `rotation.window-ssh-${slug}`,
              title: `Rotation over ssh at ${RTT} ms RTT with ${v.name} (median of ${CONNECT_ROTATIONS}, in turns with the plain pair)`,
              measured: {
                label: `window with ${v.name}`,
                value: win.median,
                unit: 'ms',
                summary: win,
              },
              baseline: {
                label: `the same pair without connect: or reload:, the same turns (median of ${CONNECT_ROTATIONS})`,
                value: pw.median,
                unit: 'ms',
                summary: pw,
              },
              // Issue 32: at most ONE round trip added per consumer machine. SCRAM's two round trips
              // are the login's floor (scram-login.ts); the rename is armed on its second (no trip of
              // its own), and the plain pair's own rename is one trip: 2 + 0 − 1 = 1. A reload rides
              // the commit's request (0).
              goal: { kind: 'absolute', max: pw.median + RTT, unit: 'ms' },
              notes: [
                `windows ${r.windows.map((x) => x.toFixed(0)).join(', ')} ms; plain ${plainWindows.map((x) => x.toFixed(0)).join(', ')} ms`,
                `window − plain window: ${(win.median - pw.median).toFixed(0)} ms = ${trips(win.median - pw.median)} round trips`,
                `round trips added per consumer machine, by the protocol: ${protocolTrips(login !== undefined, r.armed === r.windows.length)} (test login ${login ? (r.loginTrips[0] ?? 2) : 0}, rename ${login ? (r.armed === r.windows.length ? '0: armed on the login' : `1 (armed in ${r.armed} of ${r.windows.length})`) : '1'}, reload 0: carried by the commit, minus the plain pair's rename 1)`,
                ...(login
                  ? [
                      `test login (receipt → verdict, journal): median ${login.median.toFixed(0)} ms = ${trips(login.median)} round trips; SCRAM round trips counted by the client: ${r.loginTrips.join(', ')}`,
                    ]
                  : []),
                ...(reload
                  ? [
                      `reload 'true' (journal): median ${reload.median.toFixed(0)} ms = ${trips(reload.median)} round trips, after the window`,
                    ]
                  : []),
                `whole rotation (CLI, wall): ${wall.median.toFixed(0)} ms against ${pwall.median.toFixed(0)} ms plain: +${(wall.median - pwall.median).toFixed(0)} ms = ${trips(wall.median - pwall.median)} round trips`,
              ],
            });
          }),
          ...fleetFigures(),
        ],
        skipped:
          'failed' in fleetPart
            ? [
                {
                  id: 'mesh.status-ssh-20',
                  title: `mesh status and a provider-wide rotation over ${MACHINES} ssh machines`,
                  reason: fleetPart.failed,
                },
              ]
            : [],
      };
    } finally {
      provisioner?.kill('SIGTERM');
      await Promise.all([...servers.map((sshd) => sshd.stop()), pg.destroy()]);
    }
  },
};
