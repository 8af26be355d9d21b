import { describe, expect, it } from 'vitest';
import { planRotation, windowText } from '../../src/mesh/rotation-plan.js';
import { parseSelector, selectPairs } from '../../src/mesh/selector.js';
import { BatonError } from '../../src/errors.js';
import { meshInventory } from './mesh-fixture.js';

describe('affected holders', () => {
  it('are the provider machine and the consumer machine of every selected pair, once per machine, each with what it receives', () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
    expect(plan.pairs.map((p) => p.key)).toEqual(['pg-main:web1-app', 'pg-audit:web1-app']);
    expect(plan.holders.map((h) => [h.machine, h.receives.map((d) => d.path)])).toEqual([
      ['db1', ['/var/lib/baton/mesh/provides/pg-main/web1_app']],
      [
        'web1',
        ['/var/lib/baton/mesh/consumes/pg-main/web1_app', '/var/lib/baton/mesh/consumes/pg-audit/web1_app'],
      ],
      ['db2', ['/var/lib/baton/mesh/provides/pg-audit/web1_app']],
    ]);
  });

  it('selecting a provider touches its machine once and every consumer of it', () => {
    const plan = planRotation(meshInventory(3), { by: 'provider', name: 'pg-main' });
    expect(plan.pairs).toHaveLength(4);
    expect(plan.holders.map((h) => h.machine)).toEqual(['db1', 'web1', 'web2', 'web3']);
    // db1 is the provider of all four AND the consumer machine of "backup": five files, one holder.
    expect(plan.holders[0]!.receives.map((d) => `${d.end}/${d.role}`)).toEqual([
      'provides/web1_app',
      'provides/web2_app',
      'provides/web3_app',
      'provides/backup',
      'consumes/backup',
    ]);
  });

  it('selecting a machine takes every pair with an end on it, from either side', () => {
    const byDb2 = selectPairs(meshInventory(2), { by: 'machine', name: 'db2' });
    expect(byDb2.map((p) => `${p.provider}:${p.consumer}`)).toEqual([
      'pg-audit:web1-app',
      'pg-audit:web2-app',
    ]);
    const byWeb2 = selectPairs(meshInventory(2), { by: 'machine', name: 'web2' });
    expect(byWeb2.map((p) => `${p.provider}:${p.consumer}`)).toEqual([
      'pg-main:web2-app',
      'pg-audit:web2-app',
    ]);
  });

  it('a pair selector takes exactly one pair', () => {
    const plan = planRotation(meshInventory(2), parseSelector({ pair: 'pg-audit:web2-app' }));
    expect(plan.pairs.map((p) => p.key)).toEqual(['pg-audit:web2-app']);
    expect(plan.holders.map((h) => h.machine)).toEqual(['db2', 'web2']);
  });

  it('states the window of each pair in words: which connections fail, between which moments', () => {
    const plan = planRotation(meshInventory(1), { by: 'pair', provider: 'pg-main', consumer: 'web1-app' });
    expect(plan.pairs[0]!.window).toBe(
      "from pg-main applying the new password for web1_app until web1-app's file is replaced (right after the receipt is read), new connections from web1-app that still use the OLD password fail",
    );
    expect(
      windowText({
        provider: 'p',
        consumer: 'c',
        role: 'r',
        providerMachine: 'a',
        consumerMachine: 'b',
        credential: 'single',
      }),
    ).toContain('from c that still use the OLD password fail');
  });

  it('refuses no selector, two selectors and a malformed pair as usage errors (exit 2)', () => {
    for (const flags of [{}, { consumer: 'a', provider: 'b' }, { pair: 'pg-main' }]) {
      let error: unknown;
      try {
        parseSelector(flags);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(BatonError);
      expect((error as BatonError).exitCode).toBe(2);
    }
  });

  it('refuses a name the inventory does not know, listing the known ones', () => {
    let error: BatonError | undefined;
    try {
      selectPairs(meshInventory(1), { by: 'consumer', name: 'web7-app' });
    } catch (e) {
      error = e as BatonError;
    }
    expect(error?.what).toBe('The inventory has no consumer named "web7-app".');
    expect(error?.next).toContain('web1-app, backup');
  });
});
