import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/authority/index.js';
import { firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { makeAuthority, TEST_DEPLOYMENT } from '../helpers/authority.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { MemoryStore } from '../helpers/memory-store.js';

const temp = makeTempDir('baton-seal-stated-');
afterAll(() => temp.cleanup());
let n = 0;
const host = (store: MemoryStore, noSeal: boolean): ShareContext => ({
  stateDir: path.join(temp.dir, `host-${++n}`),
  deployment: TEST_DEPLOYMENT,
  store,
  clock: systemClock,
  host: 'h',
  noSeal,
});

describe('a host without a seal key publishes in the clear only when sealing is stated', () => {
  it('a first controller is refused naming both ways, and neither the store nor the state dir holds an authority', async () => {
    const store = new MemoryStore();
    const ctx = host(store, false);
    const error = await batonErrorOf(firstController(ctx));
    expect(error).toMatchObject({ code: 'refused', reason: 'seal-unstated' });
    expect(error.changed).toMatch(/^Nothing was written./);
    for (const way of ['seal_key_file', '--seal-key-file', 'seal: none', '--no-seal'])
      expect(error.next).toContain(way);
    expect(store.snapshot()).toEqual({});
    expect(existsSync(path.join(ctx.stateDir, 'ca'))).toBe(false);
  });

  it('a whole host publishing to an empty store (the document was deleted) is refused; with `seal: none` it publishes', async () => {
    const store = new MemoryStore();
    const keyless = host(store, false);
    await makeAuthority({ deployment: TEST_DEPLOYMENT, stateDir: keyless.stateDir, clock: systemClock });
    expect((await batonErrorOf(publish(keyless))).reason).toBe('seal-unstated');
    expect(store.snapshot()).toEqual({});
    const stated = { ...keyless, noSeal: true };
    expect((await publish(stated)).kind).toBe('published');
    expect(Buffer.from(store.document!.body).toString()).toContain('"files"');
  });
});
