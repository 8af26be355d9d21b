/**
 * The CPU of a command's WHOLE process tree: the command, every child, and every process that
 * went to the background on the way — an ssh ControlMaster forks away from the ssh that started
 * it, so its CPU (the handshakes' and every session's crypto) would otherwise be reaped by init
 * and counted nowhere. A perl wrapper makes itself a child subreaper (prctl
 * PR_SET_CHILD_SUBREAPER), runs the command, reaps every orphan until none is left (or
 * `reapSeconds` pass), and reads its children's user+sys from times(2) — RUSAGE_CHILDREN.
 * Processes outside the tree (the loopback sshd the "machines" are) are not counted.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const WRAPPER = String.raw`
use strict; use warnings; use Config; use POSIX (); use Time::HiRes ();
my %prctl = (x86_64 => 157, aarch64 => 167, i386 => 172);
my ($arch) = $Config{archname} =~ /^([^-]+)/;
my $nr = $prctl{$arch} // die "no prctl number for $arch\n";
syscall($nr, 36, 1, 0, 0, 0) == 0 or die "prctl(PR_SET_CHILD_SUBREAPER): $!\n";
my $out = delete $ENV{BATON_BENCH_CPU_OUT};
my $reap = delete $ENV{BATON_BENCH_REAP_SECONDS};
my $t0 = Time::HiRes::time(); my $pid = fork // die "fork: $!\n";
if (!$pid) { exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n" }
waitpid($pid, 0); my $status = $?; my $wall = Time::HiRes::time() - $t0;
my $until = time + $reap;
while (1) {
  my $got = waitpid(-1, POSIX::WNOHANG());
  last if $got < 0;
  next if $got > 0;
  last if time > $until;
  select(undef, undef, undef, 0.05);
}
my @t = times;
open my $fh, '>', $out or die "$out: $!\n"; printf $fh "%.0f %.3f\n", 1000 * ($t[2] + $t[3]), 1000 * $wall; close $fh;
exit($status & 127 ? 128 + ($status & 127) : $status >> 8);
`;

export interface TreeRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** user + sys of the whole tree, ms (10 ms resolution). */
  readonly cpuMs: number;
  /** From the command's start to ITS exit (not the orphans' reaping after it). */
  readonly wallMs: number;
}

let counter = 0;

export function runTree(
  argv: readonly string[],
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv; readonly reapSeconds?: number } = {},
): Promise<TreeRun> {
  const out = path.join(os.tmpdir(), `baton-bench-cpu-${process.pid}-${counter++}`);
  return new Promise((resolve, reject) => {
    execFile(
      'perl',
      ['-e', WRAPPER, ...argv],
      {
        ...(options.cwd ? { cwd: options.cwd } : {}),
        env: {
          ...(options.env ?? process.env),
          BATON_BENCH_CPU_OUT: out,
          BATON_BENCH_REAP_SECONDS: String(options.reapSeconds ?? 15),
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        let cpu: number;
        let wallMs: number;
        try {
          [cpu, wallMs] = readFileSync(out, 'utf8').trim().split(' ').map(Number) as [number, number];
          rmSync(out, { force: true });
        } catch {
          reject(new Error(`the CPU wrapper wrote nothing: ${stderr.slice(-2000)}`));
          return;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ exitCode: code, stdout, stderr, cpuMs: cpu, wallMs });
      },
    );
  });
}
