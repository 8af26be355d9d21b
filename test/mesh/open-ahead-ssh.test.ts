/**
 * While `mesh rotate` takes its provider lock (an ssh handshake to the provider's machine and the
 * lock's session), the first machines its read reaches open their connections — the handshake and
 * the agent's hello, no file read — so their handshakes overlap the lock's instead of following
 * it (src/operations/provider-locks.ts; docs/benchmarks.md,
 * "Round 13: the rotation's start-up and closing (issue 46)"). The safety rule stays: no end is
 * read before the lock is held. On a real sshd, every ssh baton starts goes through a
 * shim that stamps what crosses it: each session's start, each request's head (`hello`,
 * `files <op>`) and the lock's answer; the lock's ssh waits 1.5 s before it starts (a provider
 * slow to reach), so what opens ahead is seen opening while the lock is not yet held.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { processesMentioning } from '../helpers/process-registry.js';
import { openCommandTransports } from '../../src/commands/command-transports.js';
import { BatonError } from '../../src/errors.js';
import { providerDir } from '../../src/mesh/intent.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { meshIdentities } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { Resolution } from '../../src/mesh/resolve-holders.js';
import { machinesToOpenAhead } from '../../src/operations/provider-locks.js';
import { rotate } from '../../src/operations/rotate.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { fleetMachine, sshFleetYaml, writeAppliedPairs } from './mesh-fixture.js';

const MACHINES = 6;
const CONCURRENCY = 4;
const LOCK_DELAY_S = 1.5;
const unavailable = sshdUnavailable();

/**
 * An `ssh` that writes `<time> <port> <mode> <what>` lines to `log` — `start`, `req hello` /
 * `req files <op>` for each request its command carries (as it starts) and each it passes to the
 * machine after the agent's program (its length read from the loader in the remote command),
 * `ans locked` / `ans busy` for the lock's
 * answer — and runs the real ssh between the two; a `lock` session's ssh starts LOCK_DELAY_S late.
 */
function sshShim(dir: string, log: string): string {
  const realSsh = execFileSync('sh', ['-c', 'command -v ssh'], { encoding: 'utf8' }).trim();
  const shim = path.join(dir, 'ssh');
  writeFileSync(
    shim,
    String.raw`#!/usr/bin/perl
use strict; use warnings; use Time::HiRes (); use IO::Handle;
my @a = @ARGV; my $port = '';
for my $i (0 .. $#a) { $port = $a[$i + 1] if $a[$i] eq '-p'; last if $a[$i] eq '--'; }
my ($mode, $words) = ($a[-1] // '') =~ /'--' '[^']*' '(\w+)'((?: '[^']*')*) 3<&0/; $mode //= 'other';
my ($program) = ($a[-1] // '') =~ /\$Baton::WHOLE = (\d+);/; $program //= 0;
sub note { if (open(my $fh, '>>', '${log}')) { syswrite($fh, sprintf("%.6f %s %s %s\n", Time::HiRes::time(), $port, $mode, $_[0])); close $fh; } }
note('start');
# The reads a serve's command carries (hex, after its idle seconds) are asked as it starts.
if ($mode eq 'serve') { my @w = ($words // '') =~ /'([^']*)'/g; if (@w > 1) { my $t = pack('H*', $w[1]); note("req $1") while $t =~ /^(hello|files \w+)/mg; } }
pipe(my $inR, my $inW) or die "pipe: $!"; pipe(my $outR, my $outW) or die "pipe: $!";
my $ssh = fork // die "fork: $!";
if (!$ssh) {
  close $inW; close $outR;
  Time::HiRes::sleep(${LOCK_DELAY_S}) if $mode eq 'lock';
  open(STDIN, '<&', $inR) or die; open(STDOUT, '>&', $outW) or die;
  exec { '${realSsh}' } 'ssh', @ARGV or die "exec: $!";
}
close $inR; close $outW;
my $feeder = fork // die "fork: $!";
if (!$feeder) {
  close $outR; binmode STDIN; binmode $inW; $inW->autoflush(1);
  # The agent's program comes first on stdin, its length in the loader: passed on as it is.
  while ($program > 0) { my $got = sysread(STDIN, my $buf, $program) or exit 0; $program -= $got; print $inW $buf; }
  while (my $line = <STDIN>) { note("req $1") if $line =~ /^(hello|files \w+)/; print $inW $line; }
  exit 0;
}
close $inW; STDOUT->autoflush(1);
while (my $line = <$outR>) { note("ans $1") if $line =~ /^\@baton (locked|busy)/; print STDOUT $line; }
waitpid($ssh, 0); my $status = $?;
kill 'TERM', $feeder; waitpid($feeder, 0);
exit($status & 127 ? 128 + ($status & 127) : $status >> 8);
`,
  );
  chmodSync(shim, 0o755);
  return shim;
}

interface Stamp {
  readonly at: number;
  readonly machine: string;
  readonly mode: string;
  readonly what: string;
}

describeWithPart(unavailable, 'mesh rotate opens connections ahead while its provider lock is taken', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    sshd = await startSshd({ extraPorts: MACHINES });
    tmp = makeTempDir('baton-open-ahead-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  const name = fleetMachine;

  /** m01 provides pg-main, m02…m06 consume it, each machine its own port (its own connection); every pair applied. */
  function fleet(base: string, options: { readonly m02OnM01sConnection?: boolean } = {}) {
    mkdirSync(base, { recursive: true });
    const own = sshd.ports.slice(1);
    // m02 at m01's address: one connection (the lock's) for both.
    const ports = options.m02OnM01sConnection ? own.map((p, i) => (i === 1 ? own[0]! : p)) : own;
    const file = path.join(base, 'mesh.yaml');
    writeFileSync(file, sshFleetYaml(sshd, base, ports));
    const inventory = loadInventory(file);
    const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
    writeAppliedPairs(plan);
    const log = path.join(base, 'ssh.log');
    const shimDir = path.join(base, 'bin');
    mkdirSync(shimDir);
    const shim = sshShim(shimDir, log);
    const machineOfPort = new Map(ports.map((p, i): [string, string] => [String(p), name(i)]).reverse());
    const stamps = (): Stamp[] =>
      (existsSync(log) ? readFileSync(log, 'utf8') : '')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [at, port, mode, ...what] = line.split(' ');
          return {
            at: Number(at),
            machine: machineOfPort.get(port!) ?? port!,
            mode: mode!,
            what: what.join(' '),
          };
        });
    const ports_ = (journal: string) => ({
      inventory,
      journal: { dir: journal, mesh: meshIdentities(inventory)[0]! },
      transports: openCommandTransports(inventory.machines, {
        timeoutMs: 60_000,
        concurrency: CONCURRENCY,
        sshPath: shim,
        noSignalHandlers: true,
      }),
      operator: 'test',
      suggester: PLAIN_SUGGESTER,
      out: () => undefined,
    });
    return { inventory, plan, stamps, ports: ports_, shimDir };
  }

  it(
    'the first machines of the read open while the lock is taken, and no end is read before the lock is held',
    { timeout: 120_000 },
    async () => {
      const { plan, stamps, ports } = fleet(path.join(tmp.dir, 'ahead'));
      const ahead = machinesToOpenAhead(plan.pairs, plan.holders, CONCURRENCY);
      // The places but the lock's, none of them the lock's own machine.
      expect(ahead).toEqual(['m02', 'm03', 'm04']);
      let resolved: ReadonlyMap<string, Resolution> | undefined;
      // The rotation is stopped where its flow would start: after the lock and the one read.
      const code = await rotate(
        ports(path.join(tmp.dir, 'ahead', 'journal')),
        {
          selector: { by: 'provider', name: 'pg-main' },
          concurrency: CONCURRENCY,
          waitMs: 10_000,
          stop: new AbortController(),
        },
        ({ deps }) => {
          resolved = deps.resolved;
          return Promise.resolve(0);
        },
      );
      expect(code).toBe(0);
      // Every machine was read, and answered: the openings ahead carried the read that followed.
      expect([...resolved!.entries()].filter(([, r]) => r.status !== 'resolved')).toEqual([]);

      const all = stamps();
      const locked = all.find((s) => s.mode === 'lock' && s.what === 'ans locked');
      expect(locked?.machine).toBe('m01');
      // The safety rule: no end read on any machine before the provider lock is held.
      const reads = all.filter((s) => s.what.startsWith('req files'));
      expect(reads.length).toBeGreaterThanOrEqual(MACHINES);
      expect(reads.filter((s) => s.at < locked!.at)).toEqual([]);
      // Opened ahead: each of those machines' sessions started, and said its hello, before the lock was held.
      const before = all.filter((s) => s.at < locked!.at && s.mode === 'serve');
      for (const m of ahead) {
        expect(before.filter((s) => s.machine === m).map((s) => s.what)).toEqual(['start', 'req hello']);
      }
      // And nothing else: the lock's machine and the machines past the places waited for the lock.
      expect([...new Set(before.map((s) => s.machine))].sort()).toEqual(ahead);
    },
  );

  it(
    "a machine on the lock's own connection is not opened ahead: the lock opens it, and the read rides it",
    { timeout: 120_000 },
    async () => {
      const { plan, stamps, ports } = fleet(path.join(tmp.dir, 'shared'), { m02OnM01sConnection: true });
      expect(machinesToOpenAhead(plan.pairs, plan.holders, CONCURRENCY)).toEqual(['m02', 'm03', 'm04']);
      let resolved: ReadonlyMap<string, Resolution> | undefined;
      const code = await rotate(
        ports(path.join(tmp.dir, 'shared', 'journal')),
        {
          selector: { by: 'provider', name: 'pg-main' },
          concurrency: CONCURRENCY,
          waitMs: 10_000,
          stop: new AbortController(),
        },
        ({ deps }) => {
          resolved = deps.resolved;
          return Promise.resolve(0);
        },
      );
      expect(code).toBe(0);
      expect([...resolved!.entries()].filter(([, r]) => r.status !== 'resolved')).toEqual([]);
      const all = stamps();
      const locked = all.find((s) => s.mode === 'lock' && s.what === 'ans locked')!;
      // m01's port (m02's too) started nothing but the lock before it was held: no second master raced it.
      const before = all.filter((s) => s.at < locked.at && s.mode === 'serve');
      expect([...new Set(before.map((s) => s.machine))].sort()).toEqual(['m03', 'm04']);
      expect(all.filter((s) => s.what.startsWith('req files') && s.at < locked.at)).toEqual([]);
    },
  );

  it(
    'a lock held by another: refused, nothing read anywhere, and the openings ahead are ended',
    { timeout: 120_000 },
    async () => {
      const base = path.join(tmp.dir, 'busy');
      const { plan, stamps, ports, shimDir } = fleet(base);
      // Another controller holds pg-main's lock on m01.
      const other = ports(path.join(tmp.dir, 'busy', 'other-journal')).transports;
      const held = await other.transportFor('m01').lock(providerDir(plan.pairs[0]!), '{"command":"another"}');
      expect(held.taken).toBe(true);
      const since = Date.now() / 1000;
      const machines = () =>
        Array.from({ length: MACHINES }, (_, i) => snapshotDir(path.join(base, name(i))));
      const untouched = machines();
      try {
        const refused = await rotate(
          ports(path.join(tmp.dir, 'busy', 'journal')),
          {
            selector: { by: 'provider', name: 'pg-main' },
            concurrency: CONCURRENCY,
            waitMs: 10_000,
            stop: new AbortController(),
          },
          () => Promise.reject(new Error('the rotation must not start')),
        ).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(BatonError);
        expect((refused as BatonError).changed).toBe('Nothing was generated and nothing was sent.');
        expect(machines()).toEqual(untouched);
        expect((refused as BatonError).message).toMatch(
          /mesh rotate --provider pg-main refused: pg-main is being worked on by/,
        );
      } finally {
        if (held.taken) await held.release();
        await other.close();
      }
      const after = stamps().filter((s) => s.at >= since);
      expect(after.some((s) => s.mode === 'lock' && s.what === 'ans busy')).toBe(true);
      expect(after.filter((s) => s.what.startsWith('req files'))).toEqual([]);
      // The sessions opened ahead went with the refusal: no ssh of this command is left running.
      await expect.poll(() => processesMentioning(shimDir), { timeout: 10_000 }).toEqual([]);
    },
  );
});
