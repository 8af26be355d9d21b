/**
 * `mesh status` and `mesh rotate` read a pair's state with one function
 * (leftoversIn), so for every combination of on-machine files, intent records and journal they
 * agree: status exits 0 only for a pair rotate does not refuse, and the resume/rollback id it
 * suggests is the one rotate's refusal names.
 */
import { describe, expect, it } from 'vitest';
import type { SecretDigest } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import type { JournalRecord } from '../../src/mesh/journal.js';
import { INTENT_PHASES, providerDir, withMachineTruth, pairOnMachines } from '../../src/mesh/intent.js';
import { leftoversIn } from '../../src/mesh/leftovers.js';
import { meshStatusExitCode, pairStatus, type EndReading } from '../../src/mesh/mesh-status.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { FileDigests } from '../../src/mesh/transport.js';
import { meshInventory } from './mesh-fixture.js';

const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
const pair = plan.pairs[0]!;
const d = (x: string) => `sha256:${x.repeat(64).slice(0, 64)}` as SecretDigest;
const OLD = d('a');
const NEW = d('b');

function journal(id: string, phases: readonly JournalRecord['phase'][]): JournalRecord[] {
  return phases.map((phase) => ({
    id,
    at: '2026-12-01T00:00:00Z',
    operator: 't',
    phase,
    selector: '',
    holders: [],
    results: [],
    pairs: [
      {
        key: pair.key,
        provider: pair.provider,
        consumer: pair.consumer,
        role: pair.role,
        provider_machine: pair.providerMachine,
        consumer_machine: pair.consumerMachine,
        provider_path: pair.providerPath,
        consumer_path: pair.consumerPath,
        receipt_path: pair.receiptPath,
        digest: NEW,
      },
    ],
  }));
}

const JOURNALS: Record<string, JournalRecord[]> = {
  none: [],
  prepared: journal('r1', ['prepared']),
  committed: journal('r1', ['prepared', 'committed']),
  applied: journal('r1', ['prepared', 'committed', 'applied']),
};
const INTENTS = [undefined, ...INTENT_PHASES] as const;

function intentText(phase: (typeof INTENTS)[number]): string | undefined {
  if (phase === undefined) return undefined;
  return JSON.stringify({
    v: 1,
    end: 'provides',
    rotation: 'r2',
    pair: pair.key,
    phase,
    at: '2026-12-01T00:00:01Z',
    by: { host: 'other', pid: 1 },
  });
}

interface Case {
  providerLive: SecretDigest | undefined;
  providerNext: SecretDigest | undefined;
  providerPrev: SecretDigest | undefined;
  consumerLive: SecretDigest | undefined;
  consumerNext: SecretDigest | undefined;
  journal: string;
  intent: (typeof INTENTS)[number];
  locked: boolean;
}

function* cases(): Generator<Case> {
  const maybe = [undefined, OLD, NEW];
  for (const providerLive of maybe)
    for (const providerNext of [undefined, NEW])
      for (const providerPrev of [undefined, OLD])
        for (const consumerLive of maybe)
          for (const consumerNext of [undefined, NEW])
            for (const j of Object.keys(JOURNALS))
              for (const intent of INTENTS)
                for (const locked of [false, true])
                  yield {
                    providerLive,
                    providerNext,
                    providerPrev,
                    consumerLive,
                    consumerNext,
                    journal: j,
                    intent,
                    locked,
                  };
}

function both(c: Case) {
  const providerEnd: FileDigests = {
    live: c.providerLive,
    next: c.providerNext,
    ...(c.providerPrev ? { prev: c.providerPrev } : {}),
    ...(c.locked ? { lockedBy: 'another baton' } : {}),
  };
  const intent = intentText(c.intent);
  const ends = new Map<string, FileDigests>([
    [
      `${pair.providerMachine}\0${pair.providerPath}`,
      { ...providerEnd, ...(intent ? { record: intent } : {}) },
    ],
    [`${pair.consumerMachine}\0${pair.consumerPath}`, { live: c.consumerLive, next: c.consumerNext }],
  ]);
  expect(`${providerDir(pair)}/${pair.role}`).toBe(pair.providerPath);
  const history = journalHistory(JOURNALS[c.journal]!);
  const leftovers = leftoversIn(plan, ends, history);
  const on = pairOnMachines(pair, ends);
  const end = (f: FileDigests): EndReading => ({
    read: true,
    live: f.live,
    next: f.next,
    ...(f.prev ? { prev: f.prev } : {}),
    liveModifiedMs: undefined,
  });
  const status = pairStatus(
    pair,
    {
      provider: end(providerEnd),
      consumer: end({ live: c.consumerLive, next: c.consumerNext }),
      // The provisioner applied what the provider end holds: only leftovers can keep it from `applied`.
      receipt: c.providerLive
        ? { role: pair.role, digest: c.providerLive, applied_at: '2026-12-01T00:00:02Z' }
        : undefined,
    },
    withMachineTruth(history, () => on),
    Date.parse('2026-12-01T01:00:00Z'),
    undefined,
    on.lockedBy,
    leftovers[0],
  );
  return { leftovers, status };
}

describe('status and rotate read a pair with one function', () => {
  it('for every combination of files, intent, lock and journal: exit 0 ⇔ rotate does not refuse (and the ends agree)', () => {
    let combos = 0;
    let refused = 0;
    const disagreements: string[] = [];
    for (const c of cases()) {
      combos++;
      const { leftovers, status } = both(c);
      const exit = meshStatusExitCode([status]);
      if (leftovers.length > 0) refused++;
      const endsAgree =
        c.providerLive !== undefined &&
        c.providerLive === c.consumerLive &&
        !c.providerNext &&
        !c.consumerNext;
      if ((exit === 0) !== (leftovers.length === 0 && endsAgree))
        disagreements.push(`${JSON.stringify(c)}: exit ${exit}, ${leftovers.length} leftover(s)`);
      const left = leftovers[0];
      if (left) {
        // What status suggests is what rotate's refusal names: the same rotation, the same way out.
        expect(status.resumeId ?? undefined, JSON.stringify(c)).toBe(left.rotation);
        expect(status.running, JSON.stringify(c)).toBe(left.running);
        expect(status.takeBackOnly ?? false, JSON.stringify(c)).toBe(left.takeBackOnly ?? false);
      } else expect(status.resumeId, JSON.stringify(c)).toBeUndefined();
    }
    expect(disagreements.slice(0, 5)).toEqual([]);
    expect(combos).toBe(3 * 2 * 2 * 3 * 2 * 4 * 6 * 2);
    // The table is not all one answer: both sides are reached many times.
    expect(refused).toBeGreaterThan(combos / 4);
    expect(refused).toBeLessThan(combos);
  });
});
