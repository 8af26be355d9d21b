/**
 * The composition root of `baton mesh`: reads the inventory, builds transports and the
 * journal, then runs the rotation flow in a view (terminal) or as plain lines (--yes, pipes).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { BatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import type { CliContext } from './context.js';
import { hasTerminal, openInk } from './mount-view.js';
import type { MeshFlags, MeshSeedFlags } from './mesh-flags.js';
import { loadInventory, type Inventory } from '../mesh/inventory.js';
import { appendJournal, journalDirFor, journalPair, JOURNAL_FILE, newRotationId, operatorName, readJournal } from '../mesh/journal.js';
import { readSeedSecret, seedPair } from '../mesh/seed.js';
import { resolveHolders } from '../mesh/resolve-holders.js';
import { resumeRotation } from '../mesh/resume.js';
import { deliveryLabel, planRotation } from '../mesh/rotation-plan.js';
import { describeSelector, parseSelector } from '../mesh/selector.js';
import { parseAge } from '../mesh/credential-age.js';
import { readJournalHistory } from '../mesh/journal-history.js';
import { selectOlderThan } from '../mesh/select-by-age.js';
import { digestPrefix } from '../mesh/digest.js';
import { openCommandTransports } from './command-transports.js';
import { MARKS } from '../app/marks.js';
import { RECEIPT_POLL_MS, type RotationDeps } from '../app/rotation-run-effect.js';
import { runRotationPlain } from '../app/rotation-plain.js';
import { allOf, appliedCount, formatWindow, planHeadline, plural, receivesText } from '../app/rotation-text.js';
import { suggest } from '../suggest-command.js';

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
    throw new BatonError('usage', { what: `${flag} "${value}" is not a number ≥ ${min}.`, next: `For example ${flag} ${Math.max(min, 1) * 10}.`, changed: 'Nothing was sent.' });
  }
  return n;
}

export function resolveOptions(flags: Pick<MeshFlags, 'concurrency' | 'timeout'>) {
  return { concurrency: positive('--concurrency', flags.concurrency, 1), timeoutMs: positive('--timeout', flags.timeout, 0.1) * 1000 };
}

export async function runMeshPlan(ctx: CliContext, flags: MeshFlags): Promise<number> {
  const selector = parseSelector(flags);
  const options = resolveOptions(flags);
  const inventory = inventoryFrom(ctx, flags);
  const plan = planRotation(inventory, selector);
  const transports = openCommandTransports(inventory.machines, { timeoutMs: options.timeoutMs });
  let resolutions: Awaited<ReturnType<typeof resolveHolders>>;
  try {
    resolutions = await resolveHolders(plan.holders, transports.transportFor, options, () => undefined);
  } finally {
    await transports.close();
  }
  const unresolved = plan.holders.filter((h) => resolutions.get(h.machine)?.status !== 'resolved');
  if (flags.json) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          selector: plan.selectorText,
          gate: unresolved.length === 0 ? 'open' : 'closed',
          pairs: plan.pairs.map((p) => ({ provider: p.provider, consumer: p.consumer, role: p.role, provider_machine: p.providerMachine, consumer_machine: p.consumerMachine, window: p.window })),
          holders: plan.holders.map((h) => ({
            machine: h.machine,
            transport: h.transport,
            address: h.address,
            receives: h.receives.map((d) => ({ end: d.end, provider: d.provider, role: d.role, path: d.path })),
            resolution: resolutions.get(h.machine),
          })),
        },
        null,
        2,
      )}\n`,
    );
  } else {
    const out = (line: string) => ctx.stdout.write(`${line}\n`);
    out(`Plan ${planHeadline(plan)}`);
    for (const h of plan.holders) {
      const r = resolutions.get(h.machine);
      const mark = r?.status === 'resolved' ? MARKS.ok.glyph : MARKS.refused.glyph;
      out(`  ${mark} ${h.machine} (${h.transport} ${h.address}) receives ${receivesText(h)}`);
      if (r?.status === 'unresolved') out(`      unresolved: ${r.reason}`);
    }
    out('Order: provider ends first; each consumer end only after its provider\'s receipt shows the database has the new password.');
    out('Windows:');
    for (const p of plan.pairs) out(`  ${p.key} (role ${p.role}): ${p.window}.`);
    out(
      unresolved.length === 0
        ? `Gate open: ${allOf(plan.holders.length, 'machine')} resolved; \`${suggest(ctx.suggester(flags.inventory), `mesh rotate ${plan.selectorText}`)}\` would rotate ${plural(plan.pairs.length, 'credential')}.`
        : `Gate closed: ${unresolved.length} of ${plural(plan.holders.length, 'machine')} unresolved (${unresolved.map((h) => h.machine).join(', ')}); a rotation would send nothing.`,
    );
    out('Nothing was changed.');
  }
  return unresolved.length === 0 ? EXIT_OK : EXIT_CODES['action-needed'];
}

export async function runMeshRotate(ctx: CliContext, flags: MeshFlags): Promise<number> {
  const selector = parseSelector(flags, flags.olderThan !== undefined);
  const olderThanMs = flags.olderThan === undefined ? undefined : parseAge('--older-than', flags.olderThan);
  const resolve = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
  const interactive = hasTerminal(ctx) && !flags.yes;
  if (!interactive && !flags.yes) {
    throw new BatonError('usage', {
      what: 'mesh rotate needs a confirmation: there is no terminal to type it in.',
      next: 'Run it in a terminal, or add --yes to confirm from a script.',
      changed: 'Nothing was generated and nothing was sent.',
    });
  }
  const inventory = inventoryFrom(ctx, flags);
  const config = ctx.config();
  const transports = openCommandTransports(inventory.machines, { timeoutMs: resolve.timeoutMs });
  let plan = planRotation(inventory, selector);
  if (flags.olderThan !== undefined && olderThanMs !== undefined) {
    // Ages are read over the same connections the rotation then uses (one per machine).
    const history = await readJournalHistory(journalDirFor(config));
    const chosen = await selectOlderThan(inventory, selector, flags.olderThan, olderThanMs, transports.transportFor, history, { concurrency: resolve.concurrency, nowMs: Date.now() }).catch(async (error: unknown) => {
      await transports.close();
      throw error;
    });
    if (!chosen.plan) {
      await transports.close();
      ctx.stdout.write(`None of the ${chosen.considered} pair(s) of ${describeSelector(selector)} was rotated longer ago than ${flags.olderThan}. Nothing was generated and nothing was sent.\n`);
      return EXIT_OK;
    }
    plan = chosen.plan;
  }
  const deps: RotationDeps = {
    transportFor: transports.transportFor,
    journalDir: journalDirFor(config),
    operator: operatorName(ctx.env),
    resolve,
    concurrency: resolve.concurrency,
    waitMs,
    pollMs: RECEIPT_POLL_MS,
    suggester: ctx.suggester(flags.inventory),
  };
  const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
  if (interactive) {
    // Ink first (it fixes the colour setting), then the view that imports it.
    try {
      const ink = await openInk(ctx, config.noColor);
      const { mountRotationView } = await import('./mount-rotation-view.js');
      return await mountRotationView(ink, { id, plan, deps, noColor: config.noColor, stdout: ctx.stdout });
    } finally {
      await transports.close();
    }
  }
  try {
    const { code } = await runRotationPlain({ id, plan, deps, yes: true, write: (line) => ctx.stdout.write(`${line}\n`) });
    return code;
  } finally {
    await transports.close();
  }
}

export async function runMeshResume(ctx: CliContext, id: string, flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>): Promise<number> {
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
  const inventory = inventoryFrom(ctx, flags);
  const journalDir = journalDirFor(ctx.config());
  const where = path.join(journalDir, JOURNAL_FILE);
  const records = await readJournal(journalDir, id);
  const operator = operatorName(ctx.env);
  const last = records.find((r) => r.phase === 'prepared');
  const transports = openCommandTransports(inventory.machines, { timeoutMs });
  const result = await resumeRotation(
    id,
    records,
    inventory,
    transports.transportFor,
    { concurrency, waitMs, pollMs: RECEIPT_POLL_MS },
    async (phase, failures, applied) => {
      if (!last) return;
      await appendJournal(journalDir, {
        ...last,
        at: new Date().toISOString(),
        operator,
        phase,
        results: last.holders.map((h) => {
          const f = failures.find((x) => x.machine === h.machine);
          return f ? { machine: h.machine, ok: false, reason: f.reason } : { machine: h.machine, ok: phase === 'resumed' };
        }),
        ...(applied ? { applied: applied.keys, windows_ms: applied.windows } : {}),
      });
    },
    where,
  ).finally(() => transports.close());
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  const renamed = result.committed.reduce((n, s) => n + s.paths.length, 0) + Object.keys(result.windows).length;
  const n = result.pairs.length;
  const pending = result.pairs.filter((p) => !result.applied.has(p.key));
  out(
    `${pending.length === 0 ? `Resumed rotation ${id}: all ${plural(n, 'credential')} applied` : `Resumed rotation ${id}: ${appliedCount(result.applied.size, n)}, ${pending.length} pending`}; ${plural(renamed, 'file')} renamed now, ${result.alreadyLive} already live. No secret was generated.`,
  );
  for (const holder of result.holders) {
    for (const d of holder.receives) {
      const live = d.end === 'provides' ? !result.failures.some((f) => f.machine === holder.machine) : result.applied.has(d.pair);
      out(`  ${holder.machine}: ${d.path} ${live ? 'holds' : 'still staged with'} ${digestPrefix(result.digests[d.pair]!)} (${deliveryLabel(d)})`);
    }
  }
  for (const pair of result.pairs) {
    const ms = result.windows[pair.key];
    if (result.applied.has(pair.key)) out(`  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}${ms === undefined ? '' : `; ${pair.consumer}'s file replaced ${formatWindow(ms)} later (the window)`}`);
    else out(`  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s file is still staged; its old password still works.`);
  }
  for (const f of result.failures) out(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
  if (result.failures.length > 0) {
    out(`Next: fix the machine, then run: ${suggest(ctx.suggester(flags.inventory), `mesh resume ${id}`)}`);
    return EXIT_CODES.failed;
  }
  if (pending.length > 0) {
    out(`Next: once the provisioner has applied them (its receipt), run: ${suggest(ctx.suggester(flags.inventory), `mesh resume ${id}`)}`);
    return EXIT_CODES['action-needed'];
  }
  return EXIT_OK;
}

/**
 * `baton mesh seed --pair P:C --from-file F`: the documented way a pair's first password (the
 * provisioner's superuser above all) reaches both ends. The journal records the digest only.
 */
export async function runMeshSeed(ctx: CliContext, flags: MeshSeedFlags): Promise<number> {
  const selector = parseSelector({ pair: flags.pair });
  const timeoutMs = positive('--timeout', flags.timeout, 0.1) * 1000;
  const inventory = inventoryFrom(ctx, flags);
  const plan = planRotation(inventory, selector);
  const secret = readSeedSecret(path.resolve(flags.fromFile));
  const pair = plan.pairs[0]!;
  const transports = openCommandTransports(inventory.machines, { timeoutMs });
  const { digest } = await seedPair(plan, secret, transports.transportFor, { concurrency: 2 }).finally(() => transports.close());
  const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
  await appendJournal(journalDirFor(ctx.config()), {
    id,
    at: new Date().toISOString(),
    operator: operatorName(ctx.env),
    phase: 'seeded',
    selector: plan.selectorText,
    holders: plan.holders.map((h) => ({ machine: h.machine, transport: h.transport, address: h.address, receives: h.receives.map((d) => d.path) })),
    results: plan.holders.map((h) => ({ machine: h.machine, ok: true })),
    pairs: [journalPair(pair, digest)],
  });
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  out(`Seeded ${pair.key} (role ${pair.role}) with the password from ${path.resolve(flags.fromFile)}: nothing was rotated.`);
  for (const holder of plan.holders) for (const d of holder.receives) out(`  ${holder.machine}: ${d.path} holds ${digestPrefix(digest)} (0600)`);
  out(`The provisioner of ${pair.provider} sets the same password again (harmless) and writes its receipt; from then on \`${suggest(ctx.suggester(flags.inventory), `mesh rotate --pair ${pair.key}`)}\` rotates it.`);
  return EXIT_OK;
}
