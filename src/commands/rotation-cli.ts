/**
 * The commands of `baton mesh` that change the machines (rotate, resume, rollback, seed) and
 * `mesh plan`: each parses its flags, reads the inventory, builds the transports and picks a
 * screen or plain lines, then calls ONE operation (src/operations/), where the sequence lives.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import type { CliContext } from './context.js';
import { hasTerminal, openInk } from './mount-view.js';
import type { MeshFlags, MeshSeedFlags } from './mesh-flags.js';
import { loadInventory, type Inventory } from '../mesh/inventory.js';
import { journalDirFor, operatorName } from '../mesh/journal.js';
import { readSeedSecret } from '../mesh/seed.js';
import { parseSelector } from '../mesh/selector.js';
import { parseAge } from '../mesh/credential-age.js';
import { planRotation } from '../mesh/rotation-plan.js';
import { meshIdentities } from '../mesh/mesh-identity.js';
import { openCommandTransports } from './command-transports.js';
import { runRotationPlain } from '../app/rotation-plain.js';
import { keepGoingWhenOutputCloses } from './closed-output.js';
import { finishingThroughSignals, stopOnSignals } from './rotation-signals.js';
import { revokeRequest, revokeSelectionRefusal } from './revoke-flags.js';
import type { OperationJournal, OperationPorts } from '../operations/operation-ports.js';
import { rotate, type PresentRotation } from '../operations/rotate.js';
import { plan } from '../operations/plan.js';
import { resume } from '../operations/resume.js';
import { rollback } from '../operations/rollback.js';
import { seed } from '../operations/seed.js';

export { meshHistory } from '../operations/operation-ports.js';

/** The journal directory and this mesh's identity in it. */
export function meshJournal(ctx: CliContext, inventory: Inventory): OperationJournal {
  // Records an older baton wrote under its machine-derived id are this mesh's too (mesh-identity.ts).
  const [mesh, ...aliases] = meshIdentities(inventory);
  return { dir: journalDirFor(ctx.config()), mesh: mesh!, aliases };
}

export function inventoryFrom(ctx: CliContext, flags: Pick<MeshFlags, 'inventory'>): Inventory {
  const file = flags.inventory ? path.resolve(flags.inventory) : ctx.config().inventory;
  if (!file) {
    throw new BatonError('usage', {
      what: 'No mesh inventory is configured.',
      where: ctx.config().source ?? 'no config file found',
      next: 'Pass --inventory FILE or set "inventory:" in baton.yaml.',
      changed: 'Nothing was sent.',
    });
  }
  return loadInventory(file);
}

function positive(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) {
    throw new BatonError('usage', {
      what: `${flag} "${value}" is not a number ≥ ${min}.`,
      next: `For example ${flag} ${Math.max(min, 1) * 10}.`,
      changed: 'Nothing was sent.',
    });
  }
  return n;
}

export function resolveOptions(flags: Pick<MeshFlags, 'concurrency' | 'timeout'>) {
  return {
    concurrency: positive('--concurrency', flags.concurrency, 1),
    timeoutMs: positive('--timeout', flags.timeout, 0.1) * 1000,
  };
}

/** The adapters and words every operation is given, from the flags and the config. */
function portsFor(
  ctx: CliContext,
  flags: Pick<MeshFlags, 'inventory'>,
  inventory: Inventory,
  limits: { readonly timeoutMs: number; readonly concurrency?: number },
  options: { readonly noSignalHandlers?: boolean; readonly out?: (line: string) => void } = {},
): OperationPorts {
  return {
    inventory,
    journal: meshJournal(ctx, inventory),
    transports: openCommandTransports(inventory.machines, {
      timeoutMs: limits.timeoutMs,
      ...(limits.concurrency === undefined ? {} : { concurrency: limits.concurrency }),
      ...(options.noSignalHandlers ? { noSignalHandlers: true } : {}),
    }),
    operator: operatorName(ctx.env),
    suggester: ctx.suggester(flags.inventory),
    out: options.out ?? ((line) => ctx.stdout.write(`${line}\n`)),
  };
}

export async function runMeshPlan(ctx: CliContext, flags: MeshFlags): Promise<number> {
  keepGoingWhenOutputCloses(ctx.stdout);
  const selector = parseSelector(flags);
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const inventory = inventoryFrom(ctx, flags);
  return plan(portsFor(ctx, flags, inventory, { timeoutMs, concurrency }), {
    selector,
    concurrency,
    json: flags.json === true,
  });
}

export async function runMeshRotate(ctx: CliContext, flags: MeshFlags): Promise<number> {
  const selector = parseSelector(flags, flags.olderThan !== undefined);
  const olderThanMs = flags.olderThan === undefined ? undefined : parseAge('--older-than', flags.olderThan);
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
  const revoke = revokeRequest(flags);
  const interactive = hasTerminal(ctx) && !flags.yes;
  if (!interactive && !flags.yes) {
    throw new BatonError('usage', {
      what: 'mesh rotate needs a confirmation: there is no terminal to type it in.',
      next: 'Run it in a terminal, or add --yes to confirm from a script.',
      changed: 'Nothing was generated and nothing was sent.',
    });
  }
  const inventory = inventoryFrom(ctx, flags);
  if (revoke) revokeSelectionRefusal(inventory, planRotation(inventory, selector));
  const output = keepGoingWhenOutputCloses(ctx.stdout);
  const write = (line: string) => void (output.closed() ? undefined : ctx.stdout.write(`${line}\n`));
  const config = ctx.config();
  // The rotation handles its own signals (stopOnSignals): the transports must outlive the first one to roll back.
  const ports = portsFor(
    ctx,
    flags,
    inventory,
    { timeoutMs, concurrency },
    { noSignalHandlers: true, out: write },
  );
  const stop = new AbortController();
  const present: PresentRotation = async ({ id, plan: planned, deps }) => {
    const unhook = stopOnSignals(
      stop,
      (line) => void (output.closed() ? undefined : ctx.stderr.write(`${line}\n`)),
    );
    try {
      if (interactive) {
        // Ink first (it fixes the colour setting), then the view that imports it.
        const ink = await openInk(ctx, config.noColor);
        const { mountRotationView } = await import('./mount-rotation-view.js');
        return await mountRotationView(ink, {
          id,
          plan: planned,
          deps,
          noColor: config.noColor,
          stdout: ctx.stdout,
        });
      }
      return (await runRotationPlain({ id, plan: planned, deps, yes: true, write })).code;
    } finally {
      unhook();
    }
  };
  return rotate(
    ports,
    {
      selector,
      ...(flags.olderThan !== undefined && olderThanMs !== undefined
        ? { olderThan: { text: flags.olderThan, ms: olderThanMs } }
        : {}),
      concurrency,
      waitMs,
      ...(revoke ? { revoke } : {}),
      stop,
      ...(flags.appBehind ? { appBehind: flags.appBehind } : {}),
    },
    present,
  );
}

/**
 * `baton mesh seed --pair P:C --from-file F`: the documented way a pair's first password (the
 * provisioner's superuser above all) reaches both ends. The journal records the digest only.
 */
export async function runMeshSeed(ctx: CliContext, flags: MeshSeedFlags): Promise<number> {
  const inventory = inventoryFrom(ctx, flags);
  const selector = parseSelector({ pair: flags.pair });
  const timeoutMs = positive('--timeout', flags.timeout, 0.1) * 1000;
  const fromFile = path.resolve(flags.fromFile);
  // Read (and refused if it is not one password) before any machine is touched.
  const secret = readSeedSecret(fromFile);
  return seed(portsFor(ctx, flags, inventory, { timeoutMs }), {
    selector,
    pairText: flags.pair,
    fromFile,
    secret: () => secret,
  });
}

/**
 * `baton mesh resume <id>` finishes what rotation <id> left unfinished (src/operations/resume.ts);
 * `baton mesh rollback <id>` takes it back, and only that (src/operations/rollback.ts). Neither
 * generates anything; both take the same flags and, like a rotation's roll-back, own their
 * signals (finishingThroughSignals): the transports must outlive them.
 */
export async function runMeshFinishing(
  ctx: CliContext,
  command: 'resume' | 'rollback',
  id: string,
  flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>,
): Promise<number> {
  const inventory = inventoryFrom(ctx, flags);
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
  const output = keepGoingWhenOutputCloses(ctx.stdout);
  const write = (line: string) => void (output.closed() ? undefined : ctx.stdout.write(`${line}\n`));
  const ports = portsFor(
    ctx,
    flags,
    inventory,
    { timeoutMs, concurrency },
    { noSignalHandlers: true, out: write },
  );
  const operation = command === 'resume' ? resume : rollback;
  return finishingThroughSignals(
    `mesh ${command} ${id}`,
    (line) => void (output.closed() ? undefined : ctx.stderr.write(`${line}\n`)),
    () => operation(ports, { id, concurrency, waitMs }),
  );
}

type FinishingFlags = Parameters<typeof runMeshFinishing>[3];
export const runMeshResume = (ctx: CliContext, id: string, flags: FinishingFlags) =>
  runMeshFinishing(ctx, 'resume', id, flags);
export const runMeshRollback = (ctx: CliContext, id: string, flags: FinishingFlags) =>
  runMeshFinishing(ctx, 'rollback', id, flags);
