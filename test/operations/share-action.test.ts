/**
 * One step per action (src/operations/share-action.ts): sync, ca init and the failover walk run
 * the same step, so the mint gate and the `seen` guard are one code path for all three.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rotateAuthority, withAuthorityLock } from '../../src/authority/index.js';
import { isBatonError } from '../../src/errors.js';
import { caInitOperation } from '../../src/operations/ca-init.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { runAction, type MintGate } from '../../src/operations/share-action.js';
import { look } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function host(store: MemoryStore, name: string): Promise<ShareContext> {
  const { dir, cleanup } = makeTempDir(`baton-step-${name}-`);
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  await withAuthorityLock(stateDir, async () => undefined);
  let t = Date.UTC(2026, 10, 30, 10, 0, 0);
  return {
    stateDir,
    deployment: DEPLOYMENT,
    store,
    clock: { now: () => new Date((t += 1000)) },
    host: name,
    noSeal: true,
  };
}

/** A gate that counts its questions and answers no. */
function refusingGate(): MintGate & { asked: number } {
  const gate = {
    asked: 0,
    confirmMint: async (note: () => Promise<string>) => {
      gate.asked += 1;
      await note();
      throw new Error('not confirmed');
    },
  };
  return gate;
}

async function rejection(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('one step per action', () => {
  it('the first-controller step asks its mint gate once, and a "no" there mints, publishes and installs nothing (sync and ca init alike)', async () => {
    const store = new MemoryStore();
    const ctx = await host(store, 'ctl-a');
    const disk = snapshotDir(ctx.stateDir);
    const { verdict } = await look(ctx);
    const viaSync = refusingGate();
    expect(
      String(await rejection(() => runAction(ctx, { action: 'first-controller', seen: verdict }, viaSync))),
    ).toContain('not confirmed');
    const viaCaInit = refusingGate();
    expect(String(await rejection(() => caInitOperation({ share: ctx, gate: viaCaInit })))).toContain(
      'not confirmed',
    );
    expect([viaSync.asked, viaCaInit.asked]).toEqual([1, 1]);
    expect(store.document).toBeUndefined();
    expect(store.calls.filter((c) => c.op === 'put')).toEqual([]);
    expect(snapshotDir(ctx.stateDir)).toEqual(disk);
  });

  it('mints nothing and asks nothing when another controller published first: it adopts the winner', async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    const first = await runAction(
      a,
      { action: 'first-controller', seen: (await look(a)).verdict },
      { confirmMint: async () => {} },
    );
    expect(first).toMatchObject({ kind: 'first-controller', wonRace: true });
    const b = await host(store, 'ctl-b');
    const gate = refusingGate();
    const outcome = await caInitOperation({ share: b, gate });
    expect(outcome).toEqual({
      kind: 'shared',
      outcome: {
        kind: 'first-controller',
        fingerprint: (first as { fingerprint: string }).fingerprint,
        wonRace: false,
      },
    });
    expect(gate.asked).toBe(0);
  });

  it("the walk's publish is held to the look the operator confirmed; plain sync's is the table's answer under the lock", async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    await runAction(
      a,
      { action: 'first-controller', seen: (await look(a)).verdict },
      { confirmMint: async () => {} },
    );
    const before = (await look(a)).verdict;
    expect(before.kind).toBe('in-sync');
    // Another process rotates this host between the operator's look and the confirm.
    await rotateAuthority(a.stateDir, a.deployment);
    const storeBefore = store.document?.body;
    const refused = await rejection(() =>
      failoverPorts(a, 'memory://', undefined).act('publish', before, undefined),
    );
    expect(isBatonError(refused) && [refused.code, refused.reason]).toEqual(['refused', 'local-changed']);
    expect(isBatonError(refused) && refused.what).toContain(
      "This host's authority changed since you looked.",
    );
    expect(store.document?.body).toEqual(storeBefore);
    // The same step without a confirmed look publishes the rotation (this host is ahead).
    expect(await runAction(a, { action: 'publish' }, { confirmMint: async () => {} })).toMatchObject({
      kind: 'published',
    });
    expect(store.document?.body).not.toEqual(storeBefore);
  });
});
