/**
 * The handover proof with sealed documents: the signature is verified by the host it names with
 * its own key — WITHOUT the seal key, from the readable header — and, sealed, it is part of the
 * AEAD's associated data, so it cannot be stripped or swapped by whoever writes the store.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rotateAuthority, withAuthorityLock } from '../../src/authority/index.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { decodeDocument } from '../../src/share/document.js';
import { handoverMessage } from '../../src/share/handover.js';
import { adopt, firstController, force, look, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { fixedClock } from '../helpers/authority.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const DEP = '0123456789abcdef0123456789abcdef';
const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function host(store: MemoryStore, name: string, sealKey?: Uint8Array): Promise<ShareContext> {
  const { dir, cleanup } = makeTempDir(`baton-handover-${name}-`);
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  await withAuthorityLock(stateDir, async () => undefined);
  return {
    stateDir,
    deployment: DEP,
    store,
    clock: fixedClock(),
    host: name,
    noSeal: true,
    ...(sealKey ? { sealKey } : {}),
  };
}

/** a published, b adopted, a rotated and published (sealed with `key`): b is left behind. */
async function sealedLeftBehind() {
  const key = new Uint8Array(randomBytes(32));
  const store = new MemoryStore();
  const a = await host(store, 'ctl-a', key);
  const b = await host(store, 'ctl-b', key);
  await firstController(a);
  await adopt(b);
  await rotateAuthority(a.stateDir, DEP, { clock: a.clock });
  await publish(a);
  return { key, store, a, b, bWithoutKey: { ...b, sealKey: undefined } as ShareContext };
}

function edit(store: MemoryStore, change: (doc: Record<string, unknown>) => void): void {
  const doc = JSON.parse(new TextDecoder().decode(store.document!.body)) as Record<string, unknown>;
  change(doc);
  store.setDocument(new TextEncoder().encode(JSON.stringify(doc)));
}

describe('the handover proof on a sealed document', () => {
  it('signs (deployment, new fingerprint, previous fingerprint, published_at) with the previous key', async () => {
    const { store, key, b } = await sealedLeftBehind();
    const doc = await decodeDocument(store.document!.body, { deployment: DEP, where: 'test', sealKey: key });
    expect(doc.header.handover?.length).toBeGreaterThan(60);
    expect(new TextDecoder().decode(handoverMessage(doc.header))).toBe(
      JSON.stringify([
        'baton.handover/1',
        DEP,
        doc.header.fingerprint,
        doc.header.previousFingerprint,
        doc.header.publishedAt,
      ]),
    );
    const seen = await look(b);
    expect(seen.verdict).toMatchObject({
      kind: 'refuse',
      lineage: { kind: 'left-behind', proof: { kind: 'proved' } },
    });
  });

  it('is PROVED by the host it names even without the seal key: its own public key verifies the readable header', async () => {
    const { bWithoutKey } = await sealedLeftBehind();
    const seen = await look(bWithoutKey);
    expect(seen.published).toMatchObject({ state: 'present', sealed: true, current: undefined });
    expect(seen.verdict).toMatchObject({
      kind: 'refuse',
      lineage: { kind: 'left-behind', proof: { kind: 'proved' } },
    });
  });

  it('a header altered after signing is refused as tampered by the named host with no seal key, and a force installs nothing', async () => {
    const { store, bWithoutKey, b } = await sealedLeftBehind();
    edit(store, (doc) => (doc.published_at = '2020-01-01T00:00:00.000Z'));
    const seen = await look(bWithoutKey);
    expect(seen.published).toMatchObject({
      state: 'unreadable',
      error: { code: 'refused', reason: 'tampered' },
    });
    expect(seen.verdict).toMatchObject({ kind: 'blocked' });
    expect(seen.verdict.kind === 'blocked' && seen.verdict.why).toContain(
      'refused as tampered: its handover signature does not verify under',
    );
    expect(seen.verdict.kind === 'blocked' && seen.verdict.why).toContain(
      "(this host's own authority key). CLAIMED, NOT PROVED: a bad signature.",
    );
    const before = snapshotDir(b.stateDir);
    const error = await batonErrorOf(force(b));
    expect(error).toMatchObject({ code: 'refused', reason: 'blocked' });
    expect(snapshotDir(b.stateDir)).toEqual(before);
  });

  it('the signature is part of the associated data: stripping it from a sealed document makes it refuse to open', async () => {
    const { store, key } = await sealedLeftBehind();
    edit(store, (doc) => delete doc.handover_signature);
    await expect(
      decodeDocument(store.document!.body, { deployment: DEP, where: 'test', sealKey: key }),
    ).rejects.toMatchObject({
      code: 'refused',
      what: expect.stringContaining("does not open with this host's seal key"),
    });
  });

  it('a signature on a document that names no previous authority is refused: no key could have signed a handover', async () => {
    const { store, key } = await sealedLeftBehind();
    edit(store, (doc) => (doc.previous_fingerprint = null));
    await expect(
      decodeDocument(store.document!.body, { deployment: DEP, where: 'test', sealKey: key }),
    ).rejects.toMatchObject({
      what: expect.stringContaining('carries a "handover_signature" but no previous_fingerprint'),
    });
  });
});
