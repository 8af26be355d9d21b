/**
 * `mesh seed --pair P:C --from-file F`, in order: take this journal's lock and the provider's
 * lock, read both ends once (a leftover of any rotation refuses the seed), install the one
 * password on both ends (src/mesh/seed.ts), journal its digest. The documented way a pair's
 * first password (the provisioner's superuser above all) reaches both ends.
 */
import { randomBytes } from 'node:crypto';
import { EXIT_OK } from '../errors.js';
import { digestPrefix } from '../mesh/digest.js';
import { appendJournal, journalHolders, journalPair, newRotationId } from '../mesh/journal.js';
import { findLeftovers, leftoversRefusal } from '../mesh/leftovers.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import { planRotation } from '../mesh/rotation-plan.js';
import type { Secret } from '../mesh/secret.js';
import { seedPair } from '../mesh/seed.js';
import type { Selector } from '../mesh/selector.js';
import { nextStep, renderStep } from '../next-step.js';
import { closingAfter, meshHistory, type OperationPorts } from './operation-ports.js';
import { withProviderLocks } from './provider-locks.js';

export interface SeedInputs {
  readonly selector: Selector;
  /** As given: named in the lock's words and the output. */
  readonly pairText: string;
  /** The file the password came from (named in the output), and the password, read by the command. */
  readonly fromFile: string;
  readonly secret: () => Secret;
}

export async function seed(ports: OperationPorts, inputs: SeedInputs): Promise<number> {
  const { inventory, journal, transports } = ports;
  const command = `mesh seed --pair ${inputs.pairText}`;
  const plan = planRotation(inventory, inputs.selector);
  const pair = plan.pairs[0]!;
  return closingAfter(transports, () =>
    withMeshLock(journal.dir, journal.mesh, command, () =>
      withProviderLocks(plan.pairs, transports.transportFor, command, async (locks) => {
        const history = await meshHistory(journal);
        const leftovers = await findLeftovers(plan, transports.transportFor, history, 2, locks.holder);
        if (leftovers.length > 0) throw leftoversRefusal('seed', leftovers, ports.suggester);
        const { digest, consumerDigest } = await seedPair(plan, inputs.secret(), transports.transportFor, {
          concurrency: 2,
        });
        const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
        await appendJournal(journal.dir, {
          id,
          mesh: journal.mesh,
          at: new Date().toISOString(),
          operator: ports.operator,
          phase: 'seeded',
          selector: plan.selectorText,
          holders: journalHolders(plan.holders),
          results: plan.holders.map((h) => ({ machine: h.machine, ok: true })),
          pairs: [journalPair(pair, digest, undefined, consumerDigest)],
        });
        const out = ports.out;
        out(
          `Seeded ${pair.key} (role ${pair.role}${pair.login ? `, login ${pair.login.role}` : ''}) with the password from ${inputs.fromFile}: nothing was rotated.`,
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
          `The provisioner of ${pair.provider} sets the same password again (harmless) and writes its receipt; from then on \`${renderStep(ports.suggester, nextStep(`mesh rotate --pair ${pair.key}`))}\` rotates it.`,
        );
        return EXIT_OK;
      }),
    ),
  );
}
