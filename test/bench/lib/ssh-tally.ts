/**
 * Counts the ssh processes a command starts, per machine and per operation: an `ssh` first on
 * the command's PATH that appends one line (the host, and what the agent was asked: its mode,
 * and for `files` the op) to a log, then execs the real ssh with the same pid and argv. Used
 * for a separate, untimed run (the shim's own perl start is not baton's cost). A ControlMaster
 * is not an exec: it is forked by the first ssh to its host, one per machine.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';

const SHIM = (realSsh: string, log: string) => String.raw`#!/usr/bin/perl
my @a = @ARGV; my ($host, $cmd, $what) = ('?', '', '?');
for my $i (0 .. $#a) { if ($a[$i] eq '--') { $host = $a[$i + 1] // '?'; $cmd = $a[$i + 2] // ''; last; } }
if (grep { $_ eq '-O' } @a) { $what = 'ssh -O'; }
elsif ($cmd =~ /'--' '[^']*' '([^']*)'(?: '([^']*)')?/) { $what = $1 eq 'files' ? "files $2" : $1; }
elsif ($cmd ne '') { $what = 'other'; }
if (open(my $fh, '>>', '${log}')) { syswrite($fh, "$host $what\n"); close $fh; }
exec { '${realSsh}' } 'ssh', @ARGV or die "exec ${realSsh}: $!\n";
`;

export interface SshTally {
  /** The environment to run the command with: the shim first on PATH. */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** The ssh processes started since the last read, as `host → what → count`; the log is emptied. */
  take(): Map<string, Map<string, number>>;
}

export function sshTally(dir: string): SshTally {
  const realSsh = execFileSync('sh', ['-c', 'command -v ssh'], { encoding: 'utf8' }).trim();
  const log = path.join(dir, 'ssh-tally.log');
  const shim = path.join(dir, 'ssh');
  writeFileSync(shim, SHIM(realSsh, log));
  chmodSync(shim, 0o755);
  return {
    env: (base) => ({ ...base, PATH: `${dir}:${base['PATH'] ?? ''}` }),
    take: () => {
      const byHost = new Map<string, Map<string, number>>();
      if (!existsSync(log)) return byHost;
      for (const line of readFileSync(log, 'utf8').split('\n')) {
        if (line === '') continue;
        const [host = '?', ...rest] = line.split(' ');
        const what = rest.join(' ');
        const mine = byHost.get(host) ?? new Map<string, number>();
        byHost.set(host, mine);
        mine.set(what, (mine.get(what) ?? 0) + 1);
      }
      writeFileSync(log, '');
      return byHost;
    },
  };
}

/**
 * The tally in words: the provider's machine (`db1`) on its own, and the consumer machines'
 * mean per machine, each operation with its count, then the total.
 */
export function tallyWords(byHost: Map<string, Map<string, number>>, provider: string): string {
  const say = (counts: Map<string, number>, per: number) => {
    const total = [...counts.values()].reduce((a, c) => a + c, 0) / per;
    const ops = [...counts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([what, c]) => `${what} ${fmt(c / per)}`)
      .join(', ');
    return `${fmt(total)} (${ops})`;
  };
  const consumers = new Map<string, number>();
  let hosts = 0;
  for (const [host, counts] of byHost) {
    if (host === provider) continue;
    hosts += 1;
    for (const [what, c] of counts) consumers.set(what, (consumers.get(what) ?? 0) + c);
  }
  const own = byHost.get(provider);
  return `${provider}: ${own ? say(own, 1) : '0'}; per consumer machine (${hosts}): ${hosts ? say(consumers, hosts) : '0'}`;
}

const fmt = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2));
