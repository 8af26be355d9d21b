import { describe, expect, it } from 'vitest';
import type { SecretDigest } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import type { JournalRecord } from '../../src/mesh/journal.js';
import { leftoverOf, leftoversIn, leftoversRefusal } from '../../src/mesh/leftovers.js';
import { legacyMeshIdentity, meshIdentities, meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation, settledPairs } from '../../src/mesh/rotation-plan.js';
import { parseSelector, selectPairs } from '../../src/mesh/selector.js';
import { meshInventory } from './mesh-fixture.js';

const inventory = meshInventory(2);
const plan = planRotation(inventory, { by: 'consumer', name: 'web1-app' });
const pair = plan.pairs[0]!;
const d = (x: string) => `sha256:${x.repeat(64).slice(0, 64)}` as SecretDigest;

function record(
  id: string,
  phase: JournalRecord['phase'],
  extra: Partial<JournalRecord> = {},
): JournalRecord {
  return {
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
        digest: d('b'),
      },
    ],
    ...extra,
  };
}

describe('leftovers: what a rotation or seed must not start over', () => {
  const clean = journalHistory([]);
  it('a clean pair, and a finished pair with a previous file left beside it, are not leftovers', () => {
    expect(
      leftoverOf(pair, { live: d('a'), next: undefined }, { live: d('a'), next: undefined }, clean),
    ).toBeUndefined();
    expect(
      leftoverOf(
        pair,
        { live: d('a'), next: undefined, prev: d('9') },
        { live: d('a'), next: undefined },
        clean,
      ),
    ).toBeUndefined();
  });

  it('a staged end, a kept previous file of an unfinished pair, or an open rotation is one, named with its rotation', () => {
    const open = journalHistory([record('r1', 'prepared'), record('r1', 'committed')]);
    expect(
      leftoverOf(pair, { live: d('b'), next: undefined, prev: d('a') }, { live: d('a'), next: d('b') }, open),
    ).toMatchObject({ rotation: 'r1', what: expect.stringContaining('.next staged') });
    expect(
      leftoverOf(
        pair,
        { live: d('b'), next: undefined, prev: d('a') },
        { live: d('a'), next: undefined },
        clean,
      )?.what,
    ).toContain('keeps the previous provider file');
    expect(
      leftoverOf(pair, { live: d('a'), next: undefined }, { live: d('a'), next: undefined }, open)?.what,
    ).toBe('rotation r1 has not finished it');
    const refusal = leftoversRefusal('rotate', [
      leftoverOf(
        pair,
        { live: d('b'), next: undefined, prev: d('a') },
        { live: d('a'), next: d('b') },
        open,
      )!,
    ]);
    expect([refusal.exitCode, refusal.next]).toEqual([
      3,
      `${pair.key}: finish it with baton mesh resume r1 or roll it back with baton mesh rollback r1`,
    ]);
    expect(refusal.changed).toBe('Nothing was generated and nothing was sent.');
  });

  it('alternating: a .prev beside the login the consumer is not on is a missed clean-up, unless the journal has a rotation open', () => {
    const alternating = { ...pair, credential: 'alternating' as const };
    // The two ends never hold the same text: the provider end is the secret, the consumer end names the login too.
    const provider = { live: d('b'), next: undefined, prev: d('a') };
    const consumer = { live: d('c'), next: undefined, liveLogin: 'web1_app_a' };
    expect(leftoverOf(alternating, provider, consumer, clean)).toBeUndefined();
    const open = journalHistory([record('r1', 'prepared'), record('r1', 'committed')]);
    expect(leftoverOf(alternating, provider, consumer, open)?.what).toContain(
      'keeps the previous provider file',
    );
  });

  it('baton killed after the consumer commit, before the journal said applied: the consumer holds what that rotation prepared, so the pair is finished', () => {
    const open = journalHistory([record('r1', 'prepared'), record('r1', 'committed')]);
    // Single: both ends hold r1's digest (b); the kept .prev was not yet removed.
    expect(
      leftoverOf(
        pair,
        { live: d('b'), next: undefined, prev: d('a') },
        { live: d('b'), next: undefined },
        open,
      ),
    ).toBeUndefined();
    // Not yet moved: the consumer still holds a, so r1 is open and named.
    expect(
      leftoverOf(
        pair,
        { live: d('b'), next: undefined, prev: d('a') },
        { live: d('a'), next: undefined },
        open,
      )?.rotation,
    ).toBe('r1');
    // Alternating: the consumer end's own digest is the one r1 prepared for it.
    const alternating = { ...pair, credential: 'alternating' as const };
    const base = record('r1', 'prepared');
    const altOpen = journalHistory([
      { ...base, pairs: [{ ...base.pairs[0]!, credential: 'alternating', consumer_digest: d('c') }] },
      record('r1', 'committed'),
    ]);
    expect(
      leftoverOf(
        alternating,
        { live: d('e'), next: undefined },
        { live: d('c'), next: undefined, liveLogin: 'web1_app_b' },
        altOpen,
      ),
    ).toBeUndefined();
    expect(
      leftoverOf(
        alternating,
        { live: d('e'), next: undefined },
        { live: d('f'), next: undefined, liveLogin: 'web1_app_a' },
        altOpen,
      )?.what,
    ).toBe('rotation r1 has not finished it');
  });

  it('a rotation is closed for a pair once it applied or rolled it back; its age changes only when it applied it', () => {
    const rolled = journalHistory([
      record('r1', 'prepared'),
      record('r1', 'committed'),
      record('r1', 'rolled-back', {
        rolled_back: [{ pair: pair.key, result: 'rolled-back', receipt: 'old' }],
      }),
    ]);
    expect([rolled.unfinished(pair.key), rolled.pair(pair.key).lastRotatedAt]).toEqual([
      undefined,
      undefined,
    ]);
    const unknown = journalHistory([
      record('r2', 'prepared'),
      record('r2', 'rolled-back', {
        rolled_back: [{ pair: pair.key, result: 'provider-unknown', reason: 'x' }],
      }),
    ]);
    expect(unknown.unfinished(pair.key)).toBe('r2');
    const applied = journalHistory([
      record('r3', 'prepared'),
      record('r3', 'applied', { applied: [pair.key], at: '2026-12-02T00:00:00Z' }),
    ]);
    expect([applied.unfinished(pair.key), applied.pair(pair.key).lastRotatedAt]).toEqual([
      undefined,
      '2026-12-02T00:00:00Z',
    ]);
  });
});

describe('selectors and the mesh identity', () => {
  it('a repeated flag selects the union, each pair once, in inventory order', () => {
    const selector = parseSelector({ pair: ['pg-audit:web2-app', 'pg-main:web1-app', 'pg-main:web1-app'] });
    expect(selector.by).toBe('union');
    expect(selectPairs(inventory, selector).map((p) => `${p.provider}:${p.consumer}`)).toEqual([
      'pg-main:web1-app',
      'pg-audit:web2-app',
    ]);
    expect(() => parseSelector({ pair: ['pg-main:web1-app'], consumer: 'web1-app' })).toThrow(
      /Only one selector/,
    );
  });

  it('the id: field names the mesh; otherwise it is derived from the inventory file and mesh_dir, never from its machines', () => {
    expect(meshIdentity({ ...inventory, id: 'prod-eu' })).toBe('prod-eu');
    expect(meshIdentity(inventory)).toMatch(/^mesh-[0-9a-f]{12}$/);
    expect(meshIdentity({ ...inventory, meshDir: '/srv/other' })).not.toBe(meshIdentity(inventory));
    expect(meshIdentity({ ...inventory, source: '/srv/other.yaml' })).not.toBe(meshIdentity(inventory));
    // An edited machine list (a machine added, one removed) is the same mesh.
    const edited = { ...inventory, machines: inventory.machines.slice(1) };
    expect(meshIdentity(edited)).toBe(meshIdentity(inventory));
    // The id an older baton derived stays readable, and still depends on the machines as it did.
    const [own, legacy] = meshIdentities(inventory);
    expect(own).toBe(meshIdentity(inventory));
    expect(legacy).toBe(legacyMeshIdentity(inventory));
    expect(legacyMeshIdentity(edited)).not.toBe(legacy);
    expect(meshIdentities({ ...inventory, id: 'prod-eu' })).toEqual(['prod-eu']);
  });
});

describe('a switch back to single cut short after its consumer commit (switch-back.ts)', () => {
  const single = planRotation(meshInventory(1, 'local'), { by: 'consumer', name: 'web1-app' }).pairs.find(
    (p) => p.provider === 'pg-main',
  )!;
  const dir = single.providerPath.slice(0, single.providerPath.lastIndexOf('/'));
  const at = (machine: string, file: string) => `${machine}\0${file}`;
  const intent = (phase: string) =>
    JSON.stringify({
      v: 1,
      end: 'provides',
      rotation: 'r-off',
      pair: single.key,
      phase,
      at: '2026-12-01T00:00:00Z',
      by: { host: 'h', pid: 1 },
      // What it prepared: the consumer holds it, so the commit itself is done.
      prepared: { ...record('r-off', 'prepared').pairs[0], key: single.key, digest: d('b') },
    });
  /** The machines after the crash: bare consumer, plain R live, R+a live beside it, the intent `phase`. */
  function ends(options: { phase?: string; consumerLogin?: string; loginFile?: boolean } = {}) {
    const m = new Map([
      [
        at(single.providerMachine, single.providerPath),
        {
          live: d('b'),
          next: undefined,
          ...(options.phase ? { record: intent(options.phase) } : {}),
        },
      ],
      [
        at(single.consumerMachine, single.consumerPath),
        {
          live: d('b'),
          next: undefined,
          ...(options.consumerLogin ? { liveLogin: options.consumerLogin } : {}),
        },
      ],
    ]);
    if (options.loginFile !== false)
      m.set(at(single.providerMachine, `${dir}/web1_app+a`), { live: d('c'), next: undefined });
    return m;
  }
  const leftovers = (e: ReturnType<typeof ends>) =>
    leftoversIn({ ...plan, pairs: settledPairs([single], e), holders: [] }, e, journalHistory([]));

  it.each(['committing', 'finished'])(
    'intent %s: a leftover only resume finishes, naming the rotation and the file still delivered; rotate refuses it',
    (phase) => {
      const found = leftovers(ends({ phase }));
      expect(found).toMatchObject([
        {
          rotation: 'r-off',
          finishOnly: true,
          what: 'db1 still delivers web1_app+a beside web1_app: the switch back to single did not finish, and that login still logs in',
        },
      ]);
      const refusal = leftoversRefusal('rotate', found);
      expect(refusal.next).toContain('mesh resume r-off');
      expect(refusal.next).not.toContain('mesh rollback');
    },
  );

  it('none without a login file, while the consumer is still on a login (a switch yet to rotate), or with no intent naming a rotation', () => {
    expect(leftovers(ends({ phase: 'finished', loginFile: false }))).toEqual([]);
    expect(
      leftovers(ends({ phase: 'finished', consumerLogin: 'web1_app_a' })).filter((l) => l.finishOnly),
    ).toEqual([]);
    expect(leftovers(ends())).toEqual([]);
  });
});
