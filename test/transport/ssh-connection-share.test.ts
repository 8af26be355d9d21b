import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCommandTransports } from '../../src/commands/command-transports.js';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { resolveHolders } from '../../src/mesh/resolve-holders.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { scanForSecrets } from '../helpers/secret-scan.js';
import { startReceiptWriter } from '../mesh/receipt-writer.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { watchedExec } from '../helpers/watched-exec.js';
import { terminateMaster } from '../../src/transport/ssh-connection-share.js';
import { ifSet } from '../helpers/if-set.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');
const MACHINES = 20;

/** Every live process whose command line mentions `text` (an ssh master left behind would). */
function processesMentioning(text: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(text) && !cmd.includes('vitest')) out.push(`${pid}: ${cmd}`);
    } catch {
      // gone
    }
  }
  return out;
}

/** A TCP server that accepts and never says a word: an ssh to it waits for a banner forever. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('one ssh connection per machine per command, against a real sshd', () => {
  // sshd listens on at most 16 sockets: two servers give the 20 distinct machines.
  const sshds: Sshd[] = [];
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    // Fails rather than skips where sshd cannot run: the acceptance is about a real server.
    const unavailable = sshdUnavailable();
    if (unavailable) throw new Error(`the connection-sharing suite needs a real sshd: ${unavailable}`);
    sshds.push(await startSshd({ extraPorts: MACHINES / 2 }), await startSshd({ extraPorts: MACHINES / 2 }));
    tmp = makeTempDir('baton-share-');
  });
  afterAll(async () => {
    for (const s of sshds) await s.stop();
    ifSet(tmp)?.cleanup();
  });

  /** The 20 machines' endpoints: each its own port (the readiness probe's port is not one of them). */
  const endpoints = () => sshds.flatMap((s) => s.ports.slice(1).map((port) => ({ sshd: s, port })));
  /** TCP connections accepted on the machines' ports, in all, and the most on any one port. */
  const accepted = () => {
    const per = endpoints().map((e) => e.sshd.connections([e.port]));
    return { total: per.reduce((a, b) => a + b, 0), per };
  };
  const sshd = {
    get user() {
      return sshds[0]!.user;
    },
  };

  /** m01 provides pg-main; m02…m20 each hold one consumer; every machine its own sshd port. */
  function writeInventory(base: string, extra: readonly string[] = []): string {
    mkdirSync(base, { recursive: true });
    const name = (i: number) => `m${String(i + 1).padStart(2, '0')}`;
    const ports = endpoints();
    const file = path.join(base, 'mesh.yaml');
    const first = sshds[0]!;
    writeFileSync(
      file,
      [
        `ssh: { user: ${sshd.user}, identity: ${first.identity}, known_hosts: ${first.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 60 }`,
        'machines:',
        ...ports.map(
          (e, i) =>
            `  - { name: ${name(i)}, address: "127.0.0.1:${e.port}", transport: ssh, mesh_dir: ${base}/${name(i)}/mesh, identity: ${e.sshd.identity}, known_hosts: ${e.sshd.knownHosts} }`,
        ),
        ...extra,
        'providers:',
        '  - { name: pg-main, machine: m01, kind: postgres }',
        'consumers:',
        ...ports
          .slice(1)
          .map(
            (_, i) =>
              `  - { name: app${i + 2}, machine: ${name(i + 1)}, reads: each-connection, uses: [pg-main] }`,
          ),
        '',
      ].join('\n'),
    );
    return file;
  }

  it(
    'a rotation to 20 machine entries makes one TCP connection per machine, and leaves no master and no socket behind',
    { timeout: 600_000 },
    async () => {
      const base = path.join(tmp.dir, 'rotate');
      const inventory = loadInventory(writeInventory(base));
      const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
      expect(plan.holders).toHaveLength(MACHINES);
      const before = accepted();
      const transports = openCommandTransports(inventory.machines, {
        timeoutMs: 120_000,
        noSignalHandlers: true,
      });
      // A stand-in provisioner on m01: the consumer ends are committed only after its receipts.
      const provisioner = startReceiptWriter(path.join(base, 'm01', 'mesh', 'provides', 'pg-main'));
      let directory: string | undefined;
      try {
        const { code } = await runRotationPlain({
          id: 'rot-share',
          plan,
          yes: true,
          write: () => undefined,
          deps: {
            transportFor: transports.transportFor,
            journalDir: path.join(base, 'journal'),
            operator: 't',
            resolve: { concurrency: 8 },
            concurrency: 8,
            waitMs: 120_000,
            pollMs: 50,
          },
        });
        expect(code).toBe(0);
        directory = transports.share?.directory;
        expect(directory).toBeDefined();
      } finally {
        provisioner.stop();
        await transports.close();
      }
      // resolve, prepare, commit, receipts: four phases, yet each machine was handshaken once.
      const after = accepted();
      expect(after.total - before.total).toBeLessThanOrEqual(MACHINES);
      expect(after.per.map((n, i) => n - before.per[i]!).filter((n) => n > 1)).toEqual([]);
      expect(existsSync(directory!)).toBe(false);
      // A master unlinks its socket an instant before its process is reaped: allow that instant.
      await expect.poll(() => processesMentioning(directory!), { timeout: 10_000 }).toEqual([]);
    },
  );

  it(
    'mesh status over ssh: pending, applied and a hand-edited drifted end, digests only, one connection per machine',
    { timeout: 600_000 },
    async () => {
      const base = path.join(tmp.dir, 'status');
      const file = writeInventory(base);
      const state = path.join(base, 'state');
      const env = { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' };
      const run = (...args: string[]) => {
        const r = spawnSync(process.execPath, [BATON, '--state-dir', state, ...args], {
          encoding: 'utf8',
          env,
        });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr };
      };
      const live = (m: string, rel: string) => path.join(base, m, 'mesh', rel);
      // The rotation runs beside a stand-in provisioner (in this process, so the CLI is spawned
      // asynchronously): every pair is applied and both ends committed.
      const provisioner = startReceiptWriter(live('m01', 'provides/pg-main'));
      const rotated = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [
            BATON,
            '--state-dir',
            state,
            'mesh',
            'rotate',
            '--provider',
            'pg-main',
            '--inventory',
            file,
            '--yes',
            '--wait',
            '120',
            '--timeout',
            '120',
          ],
          { env, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', (code) => resolve({ code, out }));
      }).finally(() => provisioner.stop());
      expect(rotated).toMatchObject({ code: 0 });
      // app2 stays applied; app4's receipt names another digest than its provider end (delivered, not applied).
      const app2 = readFileSync(live('m01', 'provides/pg-main/app2'), 'utf8');
      writeFileSync(
        live('m01', 'provides/pg-main/.applied/app4'),
        formatReceipt({
          role: 'app4',
          digest: secretDigest('an-older-password'),
          applied_at: new Date().toISOString(),
        }),
      );
      const app3 = readFileSync(live('m03', 'consumes/pg-main/app3'), 'utf8');
      writeFileSync(live('m03', 'consumes/pg-main/app3'), 'edited-by-hand');

      const before = accepted();
      const r = run('mesh', 'status', '--inventory', file, '--json', '--timeout', '120');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(3);
      const after = accepted();
      expect(after.total - before.total).toBeLessThanOrEqual(MACHINES);
      expect(after.per.map((n, i) => n - before.per[i]!).filter((n) => n > 1)).toEqual([]);
      const states = Object.fromEntries(
        (JSON.parse(r.stdout).pairs as { consumer: string; state: string }[]).map((p) => [
          p.consumer,
          p.state,
        ]),
      );
      expect(states.app2).toBe('applied');
      expect(states.app3).toBe('drifted');
      expect(states.app4).toBe('pending');
      const plain = run('mesh', 'status', '--inventory', file, '--timeout', '120');
      const secrets = [app2, app3, readFileSync(live('m01', 'provides/pg-main/app4'), 'utf8')].map(
        (value, i) => ({ name: `secret ${i}`, value }),
      );
      expect(
        scanForSecrets(
          [
            { name: 'json', data: r.stdout },
            { name: 'plain', data: plain.stdout + plain.stderr },
            { name: 'journal', data: readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8') },
          ],
          secrets,
        ),
      ).toEqual([]);
    },
  );

  it(
    'an ssh that never answers is cancelled at --timeout: the resolve fails in words and its ssh process is gone',
    { timeout: 120_000 },
    async () => {
      const silent = await silentServer();
      try {
        const base = path.join(tmp.dir, 'silent');
        const file = writeInventory(base, [
          `  - { name: mute, address: "127.0.0.1:${silent.port}", transport: ssh, mesh_dir: ${base}/mute/mesh }`,
        ]);
        const inventory = loadInventory(file);
        const pids: number[] = [];
        const exec = watchedExec((pid) => pids.push(pid));
        // connect_timeout is 60 s in this inventory: only the command's 1 s bound can end it sooner.
        const transports = openCommandTransports(inventory.machines, {
          timeoutMs: 1_000,
          exec,
          noSignalHandlers: true,
        });
        const started = Date.now();
        try {
          const mute = { machine: 'mute', transport: 'ssh' as const, address: 'x', receives: [] };
          const result = await resolveHolders(
            [mute],
            transports.transportFor,
            { concurrency: 1 },
            () => undefined,
          );
          // On a saturated host the read is asked twice (bound-transport.ts), and says so after this.
          expect(result.get('mute')).toMatchObject({
            status: 'unresolved',
            reason: expect.stringMatching(/^resolve: no answer within 1 s/) as unknown,
          });
        } finally {
          await transports.close();
        }
        expect(Date.now() - started).toBeLessThan(60_000);
        expect(pids.length).toBeGreaterThan(0);
        for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
      } finally {
        await silent.close();
      }
    },
  );

  it(
    'a master is ended on its control socket, by this process (no `ssh -O exit`): it answers, and its process and socket are gone',
    { timeout: 120_000 },
    async () => {
      const { sshd: server, port } = endpoints()[0]!;
      const dir = mkdtempSync('/tmp/bt-mux-');
      const socket = path.join(dir, 'm');
      try {
        const master = spawnSync(
          'ssh',
          [
            ...['-F', '/dev/null', '-o', 'BatchMode=yes', '-o', 'ControlMaster=auto'],
            ...['-o', `ControlPath=${socket}`, '-o', 'ControlPersist=600', '-i', server.identity],
            ...['-o', 'IdentitiesOnly=yes', '-o', `UserKnownHostsFile=${server.knownHosts}`],
            ...[
              '-o',
              'StrictHostKeyChecking=yes',
              '-p',
              String(port),
              '-l',
              server.user,
              '127.0.0.1',
              'true',
            ],
          ],
          // Not piped: the master it leaves running would hold a pipe open, and spawnSync wait on it.
          { stdio: 'ignore', timeout: 100_000 },
        );
        expect(master.status).toBe(0);
        expect(existsSync(socket)).toBe(true);
        expect(processesMentioning(socket).length).toBeGreaterThan(0);
        expect(await terminateMaster(socket)).toBe('gone');
        await expect.poll(() => processesMentioning(socket), { timeout: 10_000 }).toEqual([]);
        expect(existsSync(socket)).toBe(false);
        // Asked again, nobody is there: that is the state close() wants.
        expect(await terminateMaster(socket)).toBe('gone');
        // A socket that is not a master's: not taken for a master that went (close() then runs `ssh -O exit`).
        const seen = new Set<net.Socket>();
        const impostor = net.createServer((c) => {
          seen.add(c);
          c.write('not a master');
        });
        await new Promise<void>((r) => impostor.listen(socket, r));
        try {
          expect(await terminateMaster(socket, 2_000)).toBe('failed');
        } finally {
          for (const c of seen) c.destroy();
          await new Promise<void>((r) => impostor.close(() => r()));
        }
      } finally {
        spawnSync('ssh', ['-F', '/dev/null', '-o', `ControlPath=${socket}`, '-O', 'exit', 'x'], {
          stdio: 'ignore',
        });
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    'SIGINT during a plan stops every ssh, ends the masters and removes the socket directory',
    { timeout: 600_000 },
    async () => {
      const silent = await silentServer();
      let stopChild = (): unknown => undefined;
      try {
        const base = path.join(tmp.dir, 'sigint');
        const file = writeInventory(base, [
          `  - { name: mute, address: "127.0.0.1:${silent.port}", transport: ssh, mesh_dir: ${base}/mute/mesh }`,
        ]);
        // mute gets a pair so the plan resolves it (and hangs there).
        const text = readFileSync(file, 'utf8').replace(
          'consumers:\n',
          'consumers:\n  - { name: muted, machine: mute, reads: each-connection, uses: [pg-main] }\n',
        );
        writeFileSync(file, text);
        // A short TMPDIR: control socket paths must stay under the 108-byte limit, or baton
        // falls back to /tmp and this test would look in the wrong place.
        const tmpdir = mkdtempSync('/tmp/bt-');
        const child = spawn(
          process.execPath,
          [BATON, 'mesh', 'plan', '--provider', 'pg-main', '--inventory', file, '--timeout', '600'],
          {
            env: { ...process.env, TMPDIR: tmpdir, NO_COLOR: '1', BATON_CONFIG: '' },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
        stopChild = () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
        // Wait until the masters to the answering machines exist (their sockets are in the directory).
        const shareDir = () =>
          readdirSync(tmpdir)
            .filter((n) => n.startsWith('baton-ssh-'))
            .map((n) => path.join(tmpdir, n))[0];
        await expect
          .poll(
            () => {
              const dir = shareDir();
              return dir ? readdirSync(dir).length : 0;
            },
            { timeout: 400_000, interval: 200 },
          )
          .toBeGreaterThanOrEqual(MACHINES);
        const dir = shareDir()!;
        expect(processesMentioning(dir).length).toBeGreaterThan(0);
        child.kill('SIGINT');
        expect(await exited).toBe(3);
        expect(existsSync(dir)).toBe(false);
        await expect.poll(() => processesMentioning(dir), { timeout: 10_000 }).toEqual([]);
        rmSync(tmpdir, { recursive: true, force: true });
      } finally {
        stopChild();
        await silent.close();
      }
    },
  );
});
