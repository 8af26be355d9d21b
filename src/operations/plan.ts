/**
 * `mesh plan`: what a rotation of the selection would do, from ONE read of every machine (its
 * digests, records and lock: the leftovers, each alternating pair's login and whether it
 * answers — the same read a rotation's gate uses). Takes no lock and changes nothing.
 */
import { EXIT_CODES, EXIT_OK } from '../errors.js';
import { findMachine } from '../mesh/inventory.js';
import { inspectPlan, waysOut } from '../mesh/leftovers.js';
import { planRotation } from '../mesh/rotation-plan.js';
import type { Selector } from '../mesh/selector.js';
import { nextStep, renderStep } from '../next-step.js';
import { MARKS } from '../app/marks.js';
import { allOf, planHeadline, plural, receivesText } from '../app/rotation-text.js';
import { closingAfter, meshHistory, type OperationPorts } from './operation-ports.js';
import { answersOf } from './rotate.js';
import { readsRefusal } from '../mesh/app-reads.js';
import { authFileRefusal } from '../mesh/poolers.js';
import { appHooks } from '../mesh/reload.js';
import { appPreviewLines } from '../app/rotation-app-text.js';
import { jsonForTerminal } from '../outside-text.js';

export interface PlanInputs {
  readonly selector: Selector;
  readonly concurrency: number;
  readonly json: boolean;
}

export async function plan(ports: OperationPorts, inputs: PlanInputs): Promise<number> {
  const { inventory, transports } = ports;
  const planned = planRotation(inventory, inputs.selector);
  const unsaid = readsRefusal(planned.pairs, inventory) ?? authFileRefusal(planned, inventory);
  if (unsaid) {
    await transports.close();
    throw unsaid;
  }
  const history = await meshHistory(ports.journal).catch(async (error: unknown) => {
    await transports.close();
    throw error;
  });
  const inspected = await closingAfter(transports, () =>
    inspectPlan(planned, transports.transportFor, history, inputs.concurrency, (name) =>
      findMachine(inventory, name),
    ),
  );
  const { plan, leftovers } = inspected;
  const resolutions = answersOf(plan, inspected.unread, new Map());
  const unresolved = plan.holders.filter((h) => resolutions.get(h.machine)?.status !== 'resolved');
  const out = ports.out;
  if (inputs.json) {
    out(
      jsonForTerminal(
        {
          selector: plan.selectorText,
          gate: unresolved.length === 0 ? 'open' : 'closed',
          leftovers: leftovers.map((l) => ({
            pair: l.pair.key,
            rotation: l.rotation ?? null,
            what: l.what,
            ...(l.running !== undefined ? { running: l.running } : {}),
          })),
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
          ...(plan.poolers
            ? {
                poolers: plan.poolers.map((p) => ({
                  name: p.name,
                  machine: p.machine,
                  kind: p.kind,
                  auth: p.auth.mode,
                  ...(p.auth.mode === 'auth_file' ? { auth_file: p.auth.file } : {}),
                  listen: p.listen,
                  pairs: p.pairs,
                })),
              }
            : {}),
        },
        2,
      ),
    );
  } else {
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
    // Whether the new credential is tried from each consumer, and how each app takes it.
    const appLines = appPreviewLines(plan, appHooks(ports.inventory));
    if (appLines.length > 0) out('The apps:');
    for (const line of appLines) out(line);
    for (const u of inspected.unknownLogins)
      out(
        `${MARKS.refused.glyph} ${u.pair}: its live login could not be read on ${u.machine} (${u.reason}); a rotation would be refused.`,
      );
    for (const l of leftovers)
      out(
        `${MARKS.action.glyph} ${l.pair.key}: ${l.what}${l.rotation ? ` (rotation ${l.rotation})` : ''}; a rotation is refused until you ${waysOut(l, ports.suggester)}.`,
      );
    // The gate line says what a rotation would do NOW: never "would rotate" beside a refusal.
    const refused = leftovers.length > 0 || inspected.unknownLogins.length > 0;
    out(
      unresolved.length > 0
        ? `Gate closed: ${unresolved.length} of ${plural(plan.holders.length, 'machine')} unresolved (${unresolved.map((h) => h.machine).join(', ')}); a rotation would send nothing.`
        : refused
          ? `Gate open: ${allOf(plan.holders.length, 'machine')} resolved; a rotation is refused until the above is done.`
          : `Gate open: ${allOf(plan.holders.length, 'machine')} resolved; \`${renderStep(ports.suggester, nextStep(`mesh rotate ${plan.selectorText}`))}\` would rotate ${plural(plan.pairs.length, 'credential')}.`,
    );
    out('Nothing was changed.');
  }
  return unresolved.length === 0 && leftovers.length === 0 && inspected.unknownLogins.length === 0
    ? EXIT_OK
    : EXIT_CODES['action-needed'];
}
