/**
 * `mesh status` over ssh rides no connection share (src/commands/command-transports.ts,
 * `one-session`): each machine's reads are requests on ONE agent session over a plain ssh, so
 * a machine costs one ssh process and one TCP connection — no ControlMaster, no control socket,
 * no `ssh -O exit` — and a session killed with its request unanswered is still reported in the
 * words the one-shot run would have said (as test/transport/ssh-serve-drops.test.ts for the
 * shared connection). Every ssh baton starts goes through a shim first on PATH that logs its
 * argv (and, for one machine, kills itself -9 after taking the request, unanswered).
 */
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { processesMentioning } from '../helpers/process-registry.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { fleetMachine, sshFleetYaml, writeAppliedPairs } from '../mesh/mesh-fixture.js';

const MACHINES = 5;
const unavailable = sshdUnavailable();

/**
 * An `ssh` that appends its argv (the remote command left out: it is the agent's 39 KB) as one
 * tab-separated line to `log`, then execs the real ssh — except for port `doomed`, where it reads
 * the session's first request from stdin and kills itself -9: for baton, a request sent and never
 * answered, on a session whose ssh died.
 */
function sshShim(dir: string, log: string, doomed: number): void {
  const realSsh = execFileSync('sh', ['-c', 'command -v ssh'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(dir, 'ssh'),
    String.raw`#!/usr/bin/perl
my @a = @ARGV; my $port = '';
for my $i (0 .. $#a) { $port = $a[$i + 1] if $a[$i] eq '-p'; last if $a[$i] eq '--'; }
my @shown = grep { length($_) < 300 } @a;
if (open(my $fh, '>>', '${log}')) { syswrite($fh, join("\t", @shown) . "\n"); close $fh; }
if ($port eq '${doomed}') { my $request = <STDIN>; kill 'KILL', $$; }
exec { '${realSsh}' } 'ssh', @ARGV or die "exec ${realSsh}: $!\n";
`,
  );
  chmodSync(path.join(dir, 'ssh'), 0o755);
}

describeWithPart(unavailable, 'mesh status over ssh: one plain agent session per machine', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    assertBuilt();
    sshd = await startSshd({ extraPorts: MACHINES });
    tmp = makeTempDir('baton-one-session-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  /** m01 provides pg-main; m02…m05 consume it; each machine its own port; every pair applied by hand. */
  function fleet(base: string): { file: string; ports: number[]; consumerFile: (i: number) => string } {
    mkdirSync(base, { recursive: true });
    const ports = sshd.ports.slice(1);
    const name = fleetMachine;
    const file = path.join(base, 'mesh.yaml');
    writeFileSync(file, sshFleetYaml(sshd, base, ports));
    const plan = planRotation(loadInventory(file), { by: 'provider', name: 'pg-main' });
    writeAppliedPairs(plan);
    const consumerFile = (i: number) => plan.pairs.find((p) => p.consumerMachine === name(i))!.consumerPath;
    return { file, ports, consumerFile };
  }

  const status = (file: string, env: NodeJS.ProcessEnv) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [BIN, '--state-dir', `${path.dirname(file)}-state`, 'mesh', 'status', '--inventory', file].concat([
          '--timeout',
          '120',
          '--json',
        ]),
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      child.once('exit', (code) => resolve({ code, stdout, stderr }));
    });

  type StatusJson = {
    pairs: { consumer: string; state: string; unreadable: { machine: string; reason: string }[] }[];
  };

  it(
    'one ssh and one TCP connection per machine, none a ControlMaster; a session killed -9 with its read unanswered is asked once more, then reported in the one-shot words; nothing is left running and nothing written',
    { timeout: 300_000 },
    async () => {
      const base = path.join(tmp.dir, 'status');
      const { file, ports, consumerFile } = fleet(base);
      // m03 is edited by hand (drifted); m04's every session is killed after its request.
      writeFileSync(consumerFile(2), 'edited-by-hand');
      const doomed = ports[3]!;
      const shimDir = path.join(tmp.dir, 'shim');
      mkdirSync(shimDir);
      const log = path.join(tmp.dir, 'ssh.log');
      sshShim(shimDir, log, doomed);
      // A TMPDIR of its own: a connection share would make its socket directory there.
      const tmpdir = path.join(tmp.dir, 'tmpdir');
      mkdirSync(tmpdir);
      const before = ports.map((p) => sshd.connections([p]));
      const files = snapshotDir(base);
      const env = {
        ...process.env,
        PATH: `${shimDir}:${process.env['PATH'] ?? ''}`,
        TMPDIR: tmpdir,
        NO_COLOR: '1',
        BATON_CONFIG: '',
      };
      const run = await status(file, env);
      expect(run.stderr).toBe('');
      const out = JSON.parse(run.stdout) as StatusJson;
      const byConsumer = Object.fromEntries(out.pairs.map((p) => [p.consumer, p]));
      expect(byConsumer['app2']?.state).toBe('applied');
      expect(byConsumer['app3']?.state).toBe('drifted');
      expect(byConsumer['app5']?.state).toBe('applied');
      // The killed machine: not read, in the words its own ssh would have ended with — never "applied".
      expect(byConsumer['app4']?.state).not.toBe('applied');
      expect(byConsumer['app4']?.unreadable).toEqual([
        {
          machine: 'm04',
          reason: "reading digests failed on the machine (exit by signal, with no answer line of baton's)",
        },
      ]);
      expect(run.code).not.toBe(0);

      const started = readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split('\t'));
      const portOf = (argv: string[]) => argv[argv.indexOf('-p') + 1];
      // No ControlMaster, no control socket, no `ssh -O exit`: plain ssh processes only.
      expect(started.filter((argv) => argv.some((a) => /Control|^-O$|^-[MS]$/.test(a)))).toEqual([]);
      // One ssh per machine that answered, the killed one started twice (the read asked once more).
      const perPort = ports.map((p) => started.filter((argv) => portOf(argv) === String(p)).length);
      expect(perPort).toEqual(ports.map((p) => (p === doomed ? 2 : 1)));
      // One TCP connection each (the killed sessions died before connecting).
      const after = ports.map((p, i) => sshd.connections([p]) - before[i]!);
      expect(after).toEqual(ports.map((p) => (p === doomed ? 0 : 1)));
      expect(readdirSync(tmpdir)).toEqual([]);
      // Read-only, and when it returns its sessions have ended.
      expect(snapshotDir(base)).toEqual(files);
      await expect.poll(() => processesMentioning(sshd.identity), { timeout: 10_000 }).toEqual([]);
    },
  );
});
