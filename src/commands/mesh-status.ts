/**
 * The composition root of `baton mesh status`: the inventory, the journal's history, the
 * command's transports (one connection per machine, its reads one agent session), then the
 * table on a terminal, plain lines in a pipe, or JSON. Read-only: it never writes to a holder
 * or the journal.
 */
import { jsonForTerminal } from '../outside-text.js';
import { EXIT_CODES } from '../errors.js';
import { hasTerminal, mountView } from './mount-view.js';
import { inventoryFrom, meshHistory, meshJournal, resolveOptions } from './rotation-cli.js';
import { keepGoingWhenOutputCloses } from './closed-output.js';
import { meshLockHolder } from '../mesh/mesh-lock.js';
import { meshStatusJson, meshStatusLines } from '../app/mesh-status-text.js';
import { parseAge } from '../mesh/credential-age.js';
import { JOURNAL_FILE } from '../mesh/journal.js';
import { meshStatusExitCode } from '../mesh/mesh-status.js';
import { readMeshStatus } from '../mesh/read-mesh-status.js';
import { planRotation } from '../mesh/rotation-plan.js';
import { appHooks } from '../mesh/reload.js';
import { parseSelector } from '../mesh/selector.js';
import { openCommandTransports } from './command-transports.js';
import type { CliContext } from './context.js';
import type { MeshFlags } from './mesh-flags.js';
import path from 'node:path';
import { readProvisionerHealth, withProvisionerHealth } from '../mesh/read-provisioner-health.js';
import { provisionerHealthJson, provisionerHealthLines } from '../app/provisioner-health-text.js';

export async function runMeshStatus(ctx: CliContext, flags: MeshFlags): Promise<number> {
  const selector = parseSelector(flags, true);
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const maxAgeMs = flags.maxAge === undefined ? undefined : parseAge('--max-age', flags.maxAge);
  const inventory = inventoryFrom(ctx, flags);
  const plan = planRotation(inventory, selector);
  // Which test logins and reloads the inventory names: a step it names but no record ran is not confirmed.
  const app = appHooks(inventory);
  const config = ctx.config();
  keepGoingWhenOutputCloses(ctx.stdout);
  const journal = meshJournal(ctx, inventory);
  // Read while the first machines' sessions shake hands (readMeshStatus awaits it after their
  // reads); a journal that cannot be read still fails the command, once awaited.
  const history = meshHistory(journal);
  history.catch(() => undefined);
  const journalFile = path.join(journal.dir, JOURNAL_FILE);
  const holder = meshLockHolder(journal.dir, journal.mesh);
  const running = holder ? `${holder.command} (pid ${holder.pid} on ${holder.host})` : undefined;
  const suggester = ctx.suggester(flags.inventory);
  // Read-only: each machine's reads ride one plain ssh session, no master to start or end.
  const transports = openCommandTransports(inventory.machines, {
    timeoutMs,
    concurrency,
    connections: 'one-session',
  });
  try {
    if (hasTerminal(ctx) && !flags.json) {
      // Each reading takes the ✓ from the pairs of a provisioner that cannot apply (its heartbeat).
      const read = async (onMachine: (machine: string, ok: boolean) => void) => {
        const nowMs = Date.now();
        const [pairs, health] = await Promise.all([
          readMeshStatus(plan, transports.transportFor, history, {
            concurrency,
            nowMs,
            maxAgeMs,
            onMachine,
            app,
            ...(running ? { running } : {}),
          }),
          readProvisionerHealth(plan, inventory, transports.transportFor, { concurrency, nowMs }),
        ]);
        return withProvisionerHealth(pairs, health);
      };
      return await mountView(
        ctx,
        // Quitting before the first reading finished is "could not read", never "all well".
        { noColor: config.noColor, ifInterrupted: EXIT_CODES.failed },
        async () => (await import('../../components/mesh-status/MeshStatusApp.js')).MeshStatusApp,
        (onExit) => ({
          selectorText: plan.selectorText,
          machines: plan.holders.length,
          read,
          color: !config.noColor,
          suggester,
          onExit,
        }),
      );
    }
    const nowMs = Date.now();
    const [pairs, health] = await Promise.all([
      readMeshStatus(plan, transports.transportFor, history, {
        concurrency,
        nowMs,
        maxAgeMs,
        // One pass: a machine read is let go at once, its session ending while the others are
        // read (a provider's heartbeat read, asked on the same session, is answered first).
        onMachine: (machine) => transports.transportFor(machine).release?.(),
        app,
        ...(running ? { running } : {}),
      }),
      readProvisionerHealth(plan, inventory, transports.transportFor, { concurrency, nowMs }),
    ]);
    const statuses = withProvisionerHealth(pairs, health);
    const code = meshStatusExitCode(statuses);
    if (flags.json)
      ctx.stdout.write(
        `${jsonForTerminal({ ...meshStatusJson(statuses, plan.selectorText, nowMs, maxAgeMs, code, suggester), provisioners: provisionerHealthJson(health, suggester), journal: journalFile, mesh: journal.mesh }, 2)}\n`,
      );
    else {
      for (const line of meshStatusLines(statuses, plan.selectorText, suggester))
        ctx.stdout.write(`${line}\n`);
      for (const line of provisionerHealthLines(health, suggester)) ctx.stdout.write(`${line}\n`);
      ctx.stdout.write(`Journal: ${journalFile} (mesh ${journal.mesh}; only its records are read).\n`);
    }
    return code;
  } finally {
    await transports.close();
  }
}
