/**
 * What a drill may leave behind, looked for where it would be: entries in the private TMPDIR
 * the test gave the child, and processes (PostgreSQL) whose command line names that dir.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Entries left in `tmp`. `baton-pg-bin-*` is the provisioner sandbox's deliberate, shared copy
 * of the PostgreSQL binaries (made only when node_modules is not traversable by `postgres`).
 */
export function leftoversIn(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => !name.startsWith('baton-pg-bin-'));
}

/**
 * PIDs whose command line mentions `text` (e.g. `postgres -D <tmp>/baton-pg-…/data`). A tmux
 * server keeps the command it was started with in its own argv: it is the test's, not a leftover.
 */
export function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(text) && !cmdline.startsWith('tmux ')) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}
