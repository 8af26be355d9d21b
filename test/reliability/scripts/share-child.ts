/**
 * A child process for the race and crash suites: runs the project's own share operations
 * (the same ones `baton sync` calls) on jobs read one JSON line at a time from stdin, and
 * answers one JSON line per job. Kept alive between jobs so 200 race trials cost 200 × the
 * work, not 400 × a Node start-up; every job gets its own state dir and store.
 */
import os from 'node:os';
import { createInterface } from 'node:readline';
import { systemClock } from '../../../src/authority/index.js';
import { isBatonError } from '../../../src/errors.js';
import { adopt, firstController, force, look } from '../../../src/share/actions.js';
import type { ShareContext } from '../../../src/share/share-context.js';
import { openStore } from '../../../src/store/open-store.js';

export interface ShareJob {
  readonly id: string;
  /** 'sync' = what `baton sync` does without flags; 'force' = `sync --force --yes`. */
  readonly op: 'sync' | 'force';
  readonly stateDir: string;
  readonly store: string;
  readonly deployment: string;
}

export type ShareAnswer =
  | { readonly id: string; readonly ok: true; readonly outcome: unknown }
  | { readonly id: string; readonly ok: false; readonly code: string; readonly message: string };

async function run(job: ShareJob): Promise<unknown> {
  const ctx: ShareContext = {
    stateDir: job.stateDir,
    deployment: job.deployment,
    store: await openStore(job.store),
    clock: systemClock,
    host: `${os.hostname()}-${process.pid}`,
    noSeal: true,
  };
  const { verdict } = await look(ctx);
  if (job.op === 'force') {
    if (verdict.kind !== 'refuse') return { kind: 'no-force', verdict: verdict.kind };
    return force(ctx, { seen: verdict });
  }
  switch (verdict.kind) {
    case 'first-controller':
      return firstController(ctx);
    case 'adopt':
      return adopt(ctx);
    default:
      return { kind: 'nothing-to-do', verdict: verdict.kind };
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const job = JSON.parse(line) as ShareJob;
  run(job).then(
    (outcome) => process.stdout.write(`${JSON.stringify({ id: job.id, ok: true, outcome })}\n`),
    (error: unknown) =>
      process.stdout.write(
        `${JSON.stringify({
          id: job.id,
          ok: false,
          code: isBatonError(error) ? error.code : 'not-a-baton-error',
          message: error instanceof Error ? error.message : String(error),
        })}\n`,
      ),
  );
});
