/**
 * The operator who does only what `mesh status --json` says: each round reads status and runs
 * the first suggested `mesh` command that is not status itself, its `args` exactly as printed
 * (a rotate gets `--yes`, the confirmation a script gives in place of the prompt), until status
 * exits 0. A step that exits other than 0 or 3, a command that exited 0 suggested again at once,
 * or a status that never reaches 0 fails the caller. Shared by the suites that kill baton and
 * then follow status (provider-rotation-kills, resume-interrupted, resume-postgres).
 */
import type { BatonRun } from '../helpers/run-baton.js';

export interface FollowOptions {
  /** Runs the built CLI with these args (the suggested ones are complete: global flags first). */
  readonly baton: (args: readonly string[]) => Promise<BatonRun>;
  /** `mesh status --json …` as this suite reads it. */
  readonly statusArgs: readonly string[];
  /** Most rounds (each a status read, and a step or a pause). */
  readonly rounds?: number;
  /** Prints each round when set (a suite's debug variable). */
  readonly debug?: boolean;
}

/** Returns what was run, `(states) mesh <verb> <id> → <exit>` each, and `(states: wait)` for a pause. */
export async function followStatus(options: FollowOptions): Promise<string[]> {
  const { baton, statusArgs } = options;
  const ran: string[] = [];
  let last = '';
  let lastRun = '';
  for (let round = 0; round < (options.rounds ?? 12); round++) {
    const status = await baton(statusArgs);
    if (status.exitCode === 0) return ran;
    last = status.all;
    const doc = JSON.parse(status.stdout) as {
      pairs: { state: string; next_steps: { args: string[]; placeholders: unknown[] }[] }[];
    };
    const steps = doc.pairs.flatMap((p) => p.next_steps).filter((s) => s.placeholders.length === 0);
    const states = [...new Set(doc.pairs.map((p) => p.state))].join('/');
    const step = steps.find((s) => s.args.includes('mesh') && !s.args.includes('status'));
    if (!step) {
      // "running — wait for it" or the provisioner's next cycle: status is the step.
      ran.push(`(${states}: wait)`);
      await new Promise((r) => setTimeout(r, 300));
      continue;
    }
    const args = step.args.includes('rotate') ? [...step.args, '--yes'] : step.args;
    // A command that ended at exit 0 and is suggested again did not do what status said it would.
    if (args.join(' ') === lastRun)
      throw new Error(
        `status suggests again what just exited 0: ${args.join(' ')}; ran: ${ran.join('; ')}\n${last}`,
      );
    const r = await baton(args);
    lastRun = r.exitCode === 0 ? args.join(' ') : '';
    if (options.debug) console.log(`${status.stdout}\n${args.join(' ')} → ${r.exitCode}\n${r.all}`);
    ran.push(`(${states}) ${args.slice(args.indexOf('mesh')).slice(0, 3).join(' ')} → ${r.exitCode}`);
    if (r.exitCode !== 0 && r.exitCode !== 3)
      throw new Error(`status suggested ${args.join(' ')}, which exited ${r.exitCode}: ${r.all}\n${last}`);
  }
  throw new Error(`mesh status never reached exit 0 (ran: ${ran.join('; ')}): ${last}`);
}
