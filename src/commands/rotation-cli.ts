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
import { findMachine, loadInventory, type Inventory } from '../mesh/inventory.js';
import { appHooks } from '../mesh/reload.js';
import { appPreviewLines } from '../app/rotation-app-text.js';
import { appBehindRefusal, behindPairs } from '../mesh/app-behind-guard.js';
import {
  appendJournal,
  journalDirFor,
  journalPair,
  JOURNAL_FILE,
  newRotationId,
  operatorName,
  readJournal,
} from '../mesh/journal.js';
import { readSeedSecret, seedPair } from '../mesh/seed.js';
import { resolveHolders } from '../mesh/resolve-holders.js';
import { appliedInJournal, resumablePlan, resumeRotation } from '../mesh/resume.js';
import { previousInJournal, rollBackPairs } from '../mesh/rollback.js';
import { deliveryLabel, planRotation, type PlannedPair } from '../mesh/rotation-plan.js';
import { describeSelector, parseSelector } from '../mesh/selector.js';
import { parseAge } from '../mesh/credential-age.js';
import { readJournalHistory, type JournalHistory } from '../mesh/journal-history.js';
import { errorCode } from '../fs/system-error.js';
import { selectOlderThan } from '../mesh/select-by-age.js';
import { digestPrefix } from '../mesh/digest.js';
import { endDigest } from '../mesh/delivery.js';
import { openCommandTransports } from './command-transports.js';
import { MARKS } from '../app/marks.js';
import { RECEIPT_POLL_MS, type RotationDeps } from '../app/rotation-run-effect.js';
import {
  journalRevoked,
  revokeAfterCommit,
  revokeResultLines,
  type RevokeRequest,
} from '../app/rotation-revoke.js';
import { runRotationPlain } from '../app/rotation-plain.js';
import {
  staysOn,
  switchedLines,
  allOf,
  appliedCount,
  formatWindow,
  planHeadline,
  plural,
  receivesText,
  rolledBackLines,
} from '../app/rotation-text.js';
import { nextStep, renderStep } from '../next-step.js';
import { meshIdentity } from '../mesh/mesh-identity.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import {
  findLeftovers,
  inspectPlan,
  leftoversRefusal,
  unknownLoginsRefusal,
  waysOut,
} from '../mesh/leftovers.js';
import { retireSwitched } from '../mesh/switch-mode.js';
import { keepGoingWhenOutputCloses } from './closed-output.js';
import { revokeRequest, revokeSelectionRefusal } from './revoke-flags.js';

/** This mesh's history in the journal, or a refusal naming the journal (nothing is read from any holder). */
export async function meshHistory(journal: {
  readonly dir: string;
  readonly mesh: string;
}): Promise<JournalHistory> {
  try {
    return await readJournalHistory(journal.dir, journal.mesh);
  } catch (error) {
    throw new BatonError('failed', {
      what: `The rotation journal could not be read (${errorCode(error)}).`,
      where: path.join(journal.dir, JOURNAL_FILE),
      next: 'Pass the --state-dir / journal_dir the rotations use, or make the journal readable.',
      changed: 'Nothing was generated and nothing was sent.',
      cause: error,
    });
  }
}

/** The journal directory and this mesh's identity in it. */
export function meshJournal(
  ctx: CliContext,
  inventory: Inventory,
): { readonly dir: string; readonly mesh: string } {
  return { dir: journalDirFor(ctx.config()), mesh: meshIdentity(inventory) };
}

/**
 * The rotation's own signal handling: the first SIGINT, SIGTERM or SIGHUP stops it safely (a
 * commit not started does not start; past the commit the unfinished pairs are rolled back),
 * and the summary is still printed. A second one ends baton at once (the ssh masters still go,
 * on exit); what it leaves is found by `mesh status`.
 */
function stopOnSignals(stop: AbortController): () => void {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) process.exit(EXIT_CODES.aborted);
    stop.abort(new Error(`interrupted by ${signal}`));
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
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

export async function runMeshPlan(ctx: CliContext, flags: MeshFlags): Promise<number> {
  keepGoingWhenOutputCloses(ctx.stdout);
  const selector = parseSelector(flags);
  const options = resolveOptions(flags);
  const inventory = inventoryFrom(ctx, flags);
  const planned = planRotation(inventory, selector);
  const journal = meshJournal(ctx, inventory);
  const history = await meshHistory(journal);
  const transports = openCommandTransports(inventory.machines, { timeoutMs: options.timeoutMs });
  let resolutions: Awaited<ReturnType<typeof resolveHolders>>;
  let inspected: Awaited<ReturnType<typeof inspectPlan>>;
  try {
    resolutions = await resolveHolders(planned.holders, transports.transportFor, options, () => undefined);
    inspected = await inspectPlan(planned, transports.transportFor, history, options.concurrency, (name) =>
      findMachine(inventory, name),
    );
  } finally {
    await transports.close();
  }
  const { plan, leftovers } = inspected;
  const unresolved = plan.holders.filter((h) => resolutions.get(h.machine)?.status !== 'resolved');
  if (flags.json) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          selector: plan.selectorText,
          gate: unresolved.length === 0 ? 'open' : 'closed',
          leftovers: leftovers.map((l) => ({ pair: l.pair.key, rotation: l.rotation ?? null, what: l.what })),
          pairs: plan.pairs.map((p) => ({
            provider: p.provider,
            consumer: p.consumer,
            role: p.role,
            provider_machine: p.providerMachine,
            consumer_machine: p.consumerMachine,
            window: p.window,
            ...(p.credential === 'alternating' ? { credential: p.credential } : {}),
            ...(p.login ? { login: p.login.role, ...(p.login.left ? { left: p.login.left.role } : {}) } : {}),
            ...(p.retire ? { retire: p.retire } : {}),
          })),
          holders: plan.holders.map((h) => ({
            machine: h.machine,
            transport: h.transport,
            address: h.address,
            receives: h.receives.map((d) => ({
              end: d.end,
              provider: d.provider,
              role: d.role,
              path: d.path,
            })),
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
    out(
      "Order: provider ends first; each consumer end only after its provider's receipt shows the database has the new password.",
    );
    out('Windows:');
    for (const p of plan.pairs) out(`  ${p.key} (role ${p.role}): ${p.window}.`);
    // app-truth: whether the new credential is tried from each consumer, and how each app takes it.
    const appLines = appPreviewLines(plan, appHooks(inventory));
    if (appLines.length > 0) out('The apps:');
    for (const line of appLines) out(line);
    for (const u of inspected.unknownLogins)
      out(
        `${MARKS.refused.glyph} ${u.pair}: its live login could not be read on ${u.machine} (${u.reason}); a rotation would be refused.`,
      );
    for (const l of leftovers)
      out(
        `${MARKS.action.glyph} ${l.pair.key}: ${l.what}${l.rotation ? ` (rotation ${l.rotation})` : ''}; a rotation is refused until you ${waysOut(l, ctx.suggester(flags.inventory))}.`,
      );
    out(
      unresolved.length === 0
        ? `Gate open: ${allOf(plan.holders.length, 'machine')} resolved; \`${renderStep(ctx.suggester(flags.inventory), nextStep(`mesh rotate ${plan.selectorText}`))}\` would rotate ${plural(plan.pairs.length, 'credential')}.`
        : `Gate closed: ${unresolved.length} of ${plural(plan.holders.length, 'machine')} unresolved (${unresolved.map((h) => h.machine).join(', ')}); a rotation would send nothing.`,
    );
    out('Nothing was changed.');
  }
  return unresolved.length === 0 && leftovers.length === 0 && inspected.unknownLogins.length === 0
    ? EXIT_OK
    : EXIT_CODES['action-needed'];
}

export async function runMeshRotate(ctx: CliContext, flags: MeshFlags): Promise<number> {
  const selector = parseSelector(flags, flags.olderThan !== undefined);
  const olderThanMs = flags.olderThan === undefined ? undefined : parseAge('--older-than', flags.olderThan);
  const resolve = resolveOptions(flags);
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
  const journal = meshJournal(ctx, inventory);
  return withMeshLock(journal.dir, journal.mesh, `mesh rotate ${describeSelector(selector)}`, () =>
    rotateLocked(ctx, flags, inventory, journal, {
      selector,
      olderThanMs,
      resolve,
      waitMs,
      interactive,
      revoke,
    }),
  );
}

async function rotateLocked(
  ctx: CliContext,
  flags: MeshFlags,
  inventory: Inventory,
  journal: { readonly dir: string; readonly mesh: string },
  options: {
    selector: ReturnType<typeof parseSelector>;
    olderThanMs: number | undefined;
    resolve: ReturnType<typeof resolveOptions>;
    waitMs: number;
    interactive: boolean;
    revoke?: RevokeRequest | undefined;
  },
): Promise<number> {
  const { selector, olderThanMs, resolve, waitMs, interactive } = options;
  const output = keepGoingWhenOutputCloses(ctx.stdout);
  const config = ctx.config();
  const history = await meshHistory(journal);
  // The rotation handles its own signals (stopOnSignals): the transports must outlive the first one to roll back.
  const transports = openCommandTransports(inventory.machines, {
    timeoutMs: resolve.timeoutMs,
    noSignalHandlers: true,
  });
  let plan = planRotation(inventory, selector);
  if (flags.olderThan !== undefined && olderThanMs !== undefined) {
    // Ages are read over the same connections the rotation then uses (one per machine).
    const chosen = await selectOlderThan(
      inventory,
      selector,
      flags.olderThan,
      olderThanMs,
      transports.transportFor,
      history,
      { concurrency: resolve.concurrency, nowMs: Date.now() },
    ).catch(async (error: unknown) => {
      await transports.close();
      throw error;
    });
    if (!chosen.plan) {
      await transports.close();
      ctx.stdout.write(
        `None of the ${chosen.considered} pair(s) of ${describeSelector(selector)} was rotated longer ago than ${flags.olderThan}. Nothing was generated and nothing was sent.\n`,
      );
      return EXIT_OK;
    }
    plan = chosen.plan;
  }
  // Before anything is generated: a pair some rotation left unfinished is finished or rolled back
  // first; and each alternating pair's target login is fixed from its consumer end, in the same read.
  const inspected = await inspectPlan(plan, transports.transportFor, history, resolve.concurrency, (name) =>
    findMachine(inventory, name),
  ).catch(async (error: unknown) => {
    await transports.close();
    throw error;
  });
  plan = inspected.plan;
  const leftovers = inspected.leftovers;
  if (inspected.unknownLogins.length > 0) {
    await transports.close();
    throw unknownLoginsRefusal(inspected.unknownLogins);
  }
  if (leftovers.length > 0) {
    await transports.close();
    throw leftoversRefusal('rotate', leftovers, ctx.suggester(flags.inventory));
  }
  // app-truth: a pair whose app still uses the login this rotation would change is refused (app-behind-guard.ts).
  const behind = await behindPairs(plan, transports.transportFor, history, resolve.concurrency);
  const behindRefusal = appBehindRefusal(behind, flags.appBehind ?? []);
  if (behindRefusal) {
    await transports.close();
    throw behindRefusal;
  }
  const stop = new AbortController();
  const deps: RotationDeps = {
    transportFor: transports.transportFor,
    journalDir: journal.dir,
    operator: operatorName(ctx.env),
    resolve,
    concurrency: resolve.concurrency,
    waitMs,
    pollMs: RECEIPT_POLL_MS,
    suggester: ctx.suggester(flags.inventory),
    stop,
    mesh: journal.mesh,
    ...(options.revoke ? { revoke: options.revoke } : {}),
    app: appHooks(inventory), // app-truth: reload: and connect: (src/app/rotation-app.ts)
  };
  const unhook = stopOnSignals(stop);
  const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
  if (interactive) {
    // Ink first (it fixes the colour setting), then the view that imports it.
    try {
      const ink = await openInk(ctx, config.noColor);
      const { mountRotationView } = await import('./mount-rotation-view.js');
      return await mountRotationView(ink, { id, plan, deps, noColor: config.noColor, stdout: ctx.stdout });
    } finally {
      unhook();
      await transports.close();
    }
  }
  try {
    const { code } = await runRotationPlain({
      id,
      plan,
      deps,
      yes: true,
      write: (line) => void (output.closed() ? undefined : ctx.stdout.write(`${line}\n`)),
    });
    return code;
  } finally {
    unhook();
    await transports.close();
  }
}

export async function runMeshResume(
  ctx: CliContext,
  id: string,
  flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>,
): Promise<number> {
  keepGoingWhenOutputCloses(ctx.stdout);
  const inventory = inventoryFrom(ctx, flags);
  const journal = meshJournal(ctx, inventory);
  return withMeshLock(journal.dir, journal.mesh, `mesh resume ${id}`, () =>
    resumeLocked(ctx, id, flags, inventory),
  );
}

async function resumeLocked(
  ctx: CliContext,
  id: string,
  flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>,
  inventory: Inventory,
): Promise<number> {
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
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
          return f
            ? { machine: h.machine, ok: false, reason: f.reason }
            : { machine: h.machine, ok: phase === 'resumed' };
        }),
        ...(applied ? { applied: applied.keys, windows_ms: applied.windows } : {}),
      });
    },
    where,
  )
    .then(async (r) => {
      // Finished pairs no longer need the provider's previous file.
      const byMachine = new Map<string, string[]>();
      for (const p of r.pairs)
        if (r.applied.has(p.key))
          byMachine.set(p.providerMachine, [...(byMachine.get(p.providerMachine) ?? []), p.providerPath]);
      await Promise.all(
        [...byMachine].map(([machine, paths]) =>
          transports
            .transportFor(machine)
            .discardPrevious(paths)
            .catch(() => undefined),
        ),
      );
      await retireSwitched(
        r.pairs.filter((p) => r.applied.has(p.key)),
        transports.transportFor,
      );
      // The rotation asked for --revoke-previous: finishing it finishes that too, under the same rule (every consumer end live).
      const request = last?.revoke_previous ? { endSessions: last.revoke_previous.end_sessions } : undefined;
      const revoked = request
        ? await revokeAfterCommit(
            request,
            r,
            r.failures,
            { applied: [...r.applied].map((pair) => ({ pair, windowMs: 0 })), failures: [] },
            transports.transportFor,
            { concurrency, waitMs, pollMs: RECEIPT_POLL_MS },
          )
        : undefined;
      if (revoked?.some((x) => x.revoked) && last) {
        await appendJournal(journalDir, {
          ...last,
          at: new Date().toISOString(),
          operator,
          phase: 'resumed',
          pairs: last.pairs.map((p) => journalRevoked(p, { step: 'done', revoked })),
          applied: [...r.applied],
        });
      }
      return { ...r, request, revoked };
    })
    .finally(() => transports.close());
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  const renamed =
    result.committed.reduce((n, s) => n + s.paths.length, 0) + Object.keys(result.windows).length;
  const n = result.pairs.length;
  const pending = result.pairs.filter((p) => !result.applied.has(p.key));
  out(
    `${pending.length === 0 ? `Resumed rotation ${id}: all ${plural(n, 'credential')} applied` : `Resumed rotation ${id}: ${appliedCount(result.applied.size, n)}, ${pending.length} pending`}; ${plural(renamed, 'file')} renamed now, ${result.alreadyLive} already live. No secret was generated.`,
  );
  for (const holder of result.holders) {
    for (const d of holder.receives) {
      const live =
        d.end === 'provides'
          ? !result.failures.some((f) => f.machine === holder.machine)
          : result.applied.has(d.pair);
      out(
        `  ${holder.machine}: ${d.path} ${live ? 'holds' : 'still staged with'} ${digestPrefix(endDigest(result.digests, d.pair, d.end)!)} (${deliveryLabel(d)})`,
      );
    }
  }
  for (const pair of result.pairs) {
    const ms = result.windows[pair.key];
    if (pair.login) out(resumedAlternatingLine(pair, result.applied.has(pair.key), waitMs));
    else if (result.applied.has(pair.key))
      out(
        `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}${ms === undefined ? '' : `; ${pair.consumer}'s file replaced ${formatWindow(ms)} later (the window)`}`,
      );
    else
      out(
        `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s new file is still staged; if ${pair.provider} applies it, ${pair.consumer}'s live password is refused until this is finished.`,
      );
  }
  for (const line of switchedLines(result.pairs.filter((p) => result.applied.has(p.key)))) out(line);
  for (const line of revokeResultLines(result.request, result.revoked, ctx.suggester(flags.inventory)))
    out(line);
  for (const f of result.failures) out(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
  if (result.failures.length > 0) {
    out(
      `Next: fix the machine, then run: ${renderStep(ctx.suggester(flags.inventory), nextStep(`mesh resume ${id}`))}`,
    );
    return EXIT_CODES.failed;
  }
  if (pending.length > 0) {
    out(
      `Next: once the provisioner has applied them (its receipt), run ${renderStep(ctx.suggester(flags.inventory), nextStep(`mesh resume ${id}`))}; or take it back: ${renderStep(ctx.suggester(flags.inventory), nextStep(`mesh rollback ${id}`))}`,
    );
    return EXIT_CODES['action-needed'];
  }
  if (result.revoked?.some((x) => !x.revoked)) return EXIT_CODES['action-needed'];
  return EXIT_OK;
}

/** A resumed alternating pair: moved to its login, or still on the one it was on, which works. */
function resumedAlternatingLine(pair: PlannedPair, applied: boolean, waitMs: number): string {
  if (applied)
    return `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.login!.role}; ${pair.consumer} moved to it (no window)`;
  return `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.login!.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s new file is still staged; ${staysOn(pair)}.`;
}

/**
 * `baton mesh seed --pair P:C --from-file F`: the documented way a pair's first password (the
 * provisioner's superuser above all) reaches both ends. The journal records the digest only.
 */
export async function runMeshSeed(ctx: CliContext, flags: MeshSeedFlags): Promise<number> {
  const inventory = inventoryFrom(ctx, flags);
  const journal = meshJournal(ctx, inventory);
  return withMeshLock(journal.dir, journal.mesh, `mesh seed --pair ${flags.pair}`, () =>
    seedLocked(ctx, flags, inventory, journal),
  );
}

async function seedLocked(
  ctx: CliContext,
  flags: MeshSeedFlags,
  inventory: Inventory,
  journal: { readonly dir: string; readonly mesh: string },
): Promise<number> {
  const selector = parseSelector({ pair: flags.pair });
  const timeoutMs = positive('--timeout', flags.timeout, 0.1) * 1000;
  const plan = planRotation(inventory, selector);
  const pair = plan.pairs[0]!;
  const history = await meshHistory(journal);
  const transports = openCommandTransports(inventory.machines, { timeoutMs });
  const leftovers = await findLeftovers(plan, transports.transportFor, history, 2).catch(
    async (error: unknown) => {
      await transports.close();
      throw error;
    },
  );
  if (leftovers.length > 0) {
    await transports.close();
    throw leftoversRefusal('seed', leftovers, ctx.suggester(flags.inventory));
  }
  const secret = readSeedSecret(path.resolve(flags.fromFile));
  const { digest, consumerDigest } = await seedPair(plan, secret, transports.transportFor, {
    concurrency: 2,
  }).finally(() => transports.close());
  const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
  await appendJournal(journal.dir, {
    id,
    mesh: journal.mesh,
    at: new Date().toISOString(),
    operator: operatorName(ctx.env),
    phase: 'seeded',
    selector: plan.selectorText,
    holders: plan.holders.map((h) => ({
      machine: h.machine,
      transport: h.transport,
      address: h.address,
      receives: h.receives.map((d) => d.path),
    })),
    results: plan.holders.map((h) => ({ machine: h.machine, ok: true })),
    pairs: [journalPair(pair, digest, undefined, consumerDigest)],
  });
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  out(
    `Seeded ${pair.key} (role ${pair.role}${pair.login ? `, login ${pair.login.role}` : ''}) with the password from ${path.resolve(flags.fromFile)}: nothing was rotated.`,
  );
  for (const holder of plan.holders)
    for (const d of holder.receives)
      out(
        `  ${holder.machine}: ${d.path} holds ${digestPrefix(d.end === 'consumes' ? consumerDigest : digest)} (0600)`,
      );
  if (pair.login)
    out(
      `  ${pair.consumer}'s file is "user=${pair.login.role} password='…'" (libpq keyword/value); ${pair.provider}'s provisioner gives ${pair.login.role} that password.`,
    );
  out(
    `The provisioner of ${pair.provider} sets the same password again (harmless) and writes its receipt; from then on \`${renderStep(ctx.suggester(flags.inventory), nextStep(`mesh rotate --pair ${pair.key}`))}\` rotates it.`,
  );
  return EXIT_OK;
}

/**
 * `baton mesh rollback <id>`: takes back what a rotation left unfinished (baton killed between
 * a provider commit and its consumer commit, a machine that was unreachable): each open pair's
 * provider gets its previous file back and its consumer's staged end is removed, as the
 * rotation itself does when a receipt does not come. A pair whose consumer already holds the
 * new password is finished, never taken back. Generates nothing.
 */
export async function runMeshRollback(
  ctx: CliContext,
  id: string,
  flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>,
): Promise<number> {
  keepGoingWhenOutputCloses(ctx.stdout);
  const inventory = inventoryFrom(ctx, flags);
  const journal = meshJournal(ctx, inventory);
  const { concurrency, timeoutMs } = resolveOptions(flags);
  const waitMs = positive('--wait', flags.wait, 0) * 1000;
  return withMeshLock(journal.dir, journal.mesh, `mesh rollback ${id}`, async () => {
    const where = path.join(journal.dir, JOURNAL_FILE);
    const records = await readJournal(journal.dir, id);
    const { pairs, digests } = resumablePlan(id, records, inventory, where);
    const finished = appliedInJournal(records);
    const open = pairs.filter((p) => !finished.has(p.key));
    const transports = openCommandTransports(inventory.machines, { timeoutMs });
    const results = await rollBackPairs(open, digests, previousInJournal(records), transports.transportFor, {
      concurrency,
      waitMs,
      pollMs: RECEIPT_POLL_MS,
    })
      .then(async (r) => {
        // A pair the roll-back found finished is a finished switch too.
        const done = new Set(r.filter((x) => x.result === 'finished').map((x) => x.pair));
        await retireSwitched(
          open.filter((p) => done.has(p.key)),
          transports.transportFor,
        );
        return r;
      })
      .finally(() => transports.close());
    const last = records.find((r) => r.phase === 'prepared')!;
    const nowFinished = results.filter((r) => r.result === 'finished').map((r) => r.pair);
    await appendJournal(journal.dir, {
      ...last,
      mesh: journal.mesh,
      at: new Date().toISOString(),
      operator: operatorName(ctx.env),
      phase: 'rolled-back',
      results: last.holders.map((h) => ({ machine: h.machine, ok: true })),
      applied: [...finished, ...nowFinished],
      rolled_back: results.map((r) => ({
        pair: r.pair,
        result: r.result,
        ...('receipt' in r ? { receipt: r.receipt } : {}),
        ...('reason' in r
          ? { reason: r.reason }
          : 'leftover' in r && r.leftover
            ? { reason: r.leftover }
            : {}),
      })),
    });
    const lines = rolledBackLines(
      {
        id,
        plan: { pairs, selectorText: last.selector },
        applied: [...finished],
        windows: {},
        failures: [],
        stopped: 'mesh rollback',
        results,
      },
      ctx.suggester(flags.inventory),
    );
    for (const line of lines) ctx.stdout.write(`${line}\n`);
    return results.every((r) => r.result === 'finished' || (r.result === 'rolled-back' && !r.leftover))
      ? EXIT_OK
      : EXIT_CODES['action-needed'];
  });
}
