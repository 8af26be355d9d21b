/**
 * The receipt wait with a reader and a rename channel (what the ssh and local transports
 * offer): the window is taken from the two machines' own clocks, each put on the controller's
 * by its channel's measured offset, and a receipt seen before the wait starts is renamed at
 * once when it does.
 */
import { describe, expect, it } from 'vitest';
import { beginReceiptWait, commitProviderEnds, providerCommitSteps } from '../../src/mesh/delivery.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { recordsThenInTurn, type BoundTransport, type TransportFor } from '../../src/mesh/transport.js';
import { meshInventory } from './mesh-fixture.js';

/** The wait as the rotation runs it: begun (or handed one begun earlier), run for the pairs, closed. */
async function commitConsumersOnReceipt(
  pairs: Parameters<typeof beginReceiptWait>[0],
  digests: Parameters<typeof beginReceiptWait>[1],
  transportFor: TransportFor,
  wait: Parameters<typeof beginReceiptWait>[3],
  onApplied: Parameters<ReturnType<typeof beginReceiptWait>['run']>[1],
  begun = beginReceiptWait(pairs, digests, transportFor, wait),
) {
  try {
    return await begun.run(pairs, onApplied);
  } finally {
    begun.close();
  }
}

const plan = planRotation(meshInventory(1), { by: 'pair', provider: 'pg-main', consumer: 'web1-app' });
const pair = plan.pairs[0]!;
const digest = secretDigest('new');
const DB1_OFFSET = -3_000;
const WEB1_OFFSET = 5_000;

/** db1's clock runs 3 s behind the controller's, web1's 5 s ahead; the receipt was written 40 ms ago. */
function machines(receiptAgoMs = 40) {
  const renamed: string[] = [];
  let receipt: string | undefined;
  const unused = async (): Promise<never> => {
    throw new Error('not used by the receipt wait');
  };
  const base = {
    resolve: unused,
    stage: unused,
    unstage: unused,
    digests: unused,
    commit: unused,
    keepPrevious: unused,
    restorePrevious: unused,
    discardPrevious: unused,
    retire: unused,
    writeRecords: unused,
    writeRecordsThen: unused,
    lock: unused,
  };
  const writeReceipt = () => {
    receipt = formatReceipt({
      role: pair.role,
      digest,
      applied_at: new Date(Date.now() - receiptAgoMs + DB1_OFFSET).toISOString(),
    });
  };
  const db1: BoundTransport = {
    ...base,
    machine: 'db1',
    readTexts: async () => [receipt],
    watchTexts: async (_paths, _options, onChange, until) => {
      // Reports what is there (first: nothing), then the receipt as soon as it is there.
      while (!until.aborted) {
        onChange([{ index: 0, text: receipt }]);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    openChannel: async () => ({
      clock: { offsetMs: DB1_OFFSET, withinMs: 1 },
      commit: unused,
      close: () => undefined,
    }),
  };
  const web1: BoundTransport = {
    ...base,
    machine: 'web1',
    readTexts: unused,
    openChannel: async () => ({
      clock: { offsetMs: WEB1_OFFSET, withinMs: 1 },
      commit: async (paths) => {
        renamed.push(...paths);
        return Date.now() + WEB1_OFFSET;
      },
      close: () => undefined,
    }),
  };
  const transportFor: TransportFor = (name) =>
    name === 'db1' ? db1 : name === 'web1' ? web1 : (undefined as never);
  return { transportFor, renamed, writeReceipt };
}

const wait = { waitMs: 2_000, pollMs: 5, concurrency: 4 };

describe('the receipt wait over a reader and a rename channel', () => {
  it('measures the window from the provider clock to the consumer clock, each corrected by its offset', async () => {
    const { transportFor, renamed, writeReceipt } = machines(40);
    writeReceipt();
    const result = await commitConsumersOnReceipt(
      [pair],
      { [pair.key]: digest },
      transportFor,
      wait,
      () => undefined,
    );
    expect(renamed).toEqual([pair.consumerPath]);
    expect(result.failures).toEqual([]);
    // Without the offsets it would read 8,040 ms.
    expect(result.applied[0]!.windowMs).toBeGreaterThanOrEqual(40);
    expect(result.applied[0]!.windowMs).toBeLessThan(4_000);
  });

  it('a receipt seen before the wait begins renames nothing until it does, then at once', async () => {
    const { transportFor, renamed, writeReceipt } = machines(0);
    // A wait of 60 s: the receipt already seen ends it at once, not when the wait runs out.
    const longWait = { ...wait, waitMs: 60_000 };
    const begun = beginReceiptWait([pair], { [pair.key]: digest }, transportFor, longWait);
    await begun.ready;
    writeReceipt();
    await new Promise((r) => setTimeout(r, 50));
    expect(renamed).toEqual([]);
    const started = Date.now();
    const result = await commitConsumersOnReceipt(
      [pair],
      { [pair.key]: digest },
      transportFor,
      longWait,
      () => undefined,
      begun,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(renamed).toEqual([pair.consumerPath]);
    expect(result.applied.map((a) => a.pair)).toEqual([pair.key]);
  });

  it('a receipt with another digest is "not yet": the consumer end stays staged until the wait ends', async () => {
    const { transportFor, renamed } = machines();
    const other = formatReceipt({
      role: pair.role,
      digest: secretDigest('old'),
      applied_at: new Date().toISOString(),
    });
    const db1 = transportFor('db1');
    const fooled: TransportFor = (name) =>
      name === 'db1'
        ? {
            ...db1,
            readTexts: async () => [other],
            watchTexts: async (_p, _o, onChange, until) => {
              onChange([{ index: 0, text: other }]);
              await new Promise((r) => until.addEventListener('abort', r, { once: true }));
            },
          }
        : transportFor(name);
    const result = await commitConsumersOnReceipt(
      [pair],
      { [pair.key]: digest },
      fooled,
      { ...wait, waitMs: 200 },
      () => undefined,
    );
    expect(result.applied).toEqual([]);
    expect(renamed).toEqual([]);
  });

  it("the provider ends go live on the provider's open rename channel, not in a session of their own", async () => {
    const { transportFor } = machines();
    const db1 = transportFor('db1');
    const sessions: string[] = [];
    const channelled: string[][] = [];
    const provider: TransportFor = (name) =>
      name === 'db1'
        ? {
            ...db1,
            keepPrevious: async (paths) => paths.map(() => undefined),
            commit: async (paths) => void sessions.push(...paths),
            writeRecordsThen(records, step) {
              return recordsThenInTurn(this, records, step);
            },
            openChannel: async () => ({
              clock: { offsetMs: DB1_OFFSET, withinMs: 1 },
              commit: async (paths) => {
                channelled.push([...paths]);
                return Date.now() + DB1_OFFSET;
              },
              close: () => undefined,
            }),
          }
        : transportFor(name);
    const begun = beginReceiptWait([pair], { [pair.key]: digest }, provider, wait);
    await begun.ready;
    const steps = providerCommitSteps(plan.holders);
    const result = await commitProviderEnds(
      steps,
      provider,
      4,
      () => undefined,
      (m) => begun.channel(m),
    );
    begun.close();
    expect(result.failures).toEqual([]);
    expect(channelled).toEqual([[pair.providerPath]]);
    expect(sessions).toEqual([]);
    // Without a receipt wait (no channel), the same step is a session's commit.
    const plain = await commitProviderEnds(steps, provider, 4, () => undefined);
    expect(plain.failures).toEqual([]);
    expect(sessions).toEqual([pair.providerPath]);
  });

  it("each consumer's rename is written during the reading that saw its receipt, not after the rest of it", async () => {
    // Two consumers of pg-main on two machines; db1's reader reports both receipts in ONE reading.
    const two = planRotation(meshInventory(2), { by: 'provider', name: 'pg-main' }).pairs.filter((p) =>
      p.consumerMachine.startsWith('web'),
    );
    expect(two.map((p) => p.consumerMachine)).toEqual(['web1', 'web2']);
    const digests = Object.fromEntries(two.map((p) => [p.key, secretDigest(`new ${p.key}`)]));
    const { transportFor } = machines();
    const order: string[] = [];
    let report: ((changes: readonly { index: number; text: string | undefined }[]) => void) | undefined;
    const receipts = two.map((p) =>
      formatReceipt({ role: p.role, digest: digests[p.key]!, applied_at: new Date().toISOString() }),
    );
    const consumer = (machine: string): BoundTransport => ({
      ...transportFor('web1'),
      machine,
      openChannel: async () => ({
        clock: { offsetMs: 0, withinMs: 1 },
        commit: async () => {
          order.push(`renamed on ${machine}`);
          return Date.now();
        },
        close: () => undefined,
      }),
    });
    const fleet: TransportFor = (name) =>
      name === 'db1'
        ? {
            ...transportFor('db1'),
            readTexts: async () => [undefined, undefined],
            watchTexts: async (_paths, _options, onChange, until) => {
              report = onChange;
              onChange([
                { index: 0, text: undefined },
                { index: 1, text: undefined },
              ]);
              await new Promise((r) => until.addEventListener('abort', r, { once: true }));
            },
          }
        : consumer(name);
    const begun = beginReceiptWait(two, digests, fleet, wait);
    await begun.ready;
    const finished = begun.run(two, () => undefined);
    report!([
      { index: 0, text: receipts[0] },
      { index: 1, text: receipts[1] },
    ]);
    order.push('the reading returned');
    const result = await finished;
    begun.close();
    expect(result.applied.map((a) => a.pair).sort()).toEqual(two.map((p) => p.key).sort());
    // Both renames were handed to their open channels inside the reading: neither waited for a later turn.
    expect(order).toEqual(['renamed on web1', 'renamed on web2', 'the reading returned']);
  });
});
