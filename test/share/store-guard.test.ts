import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { suggester } from '../../src/suggest-command.js';
import { nextStep } from '../../src/next-step.js';
import { storeWriteGuard, unenforcedOverrideValue } from '../../src/share/store-guard.js';
import { readStoreCheck, writeStoreCheck } from '../../src/store/store-check-record.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { MemoryStore } from '../helpers/memory-store.js';

const temp = makeTempDir('baton-store-guard-');
afterAll(() => temp.cleanup());
const URL = 's3://fleet/prod?endpoint=http://gateway:9000';
let n = 0;
const root = () => path.join(temp.dir, `root-${++n}`);

describe('the store guard before a write', () => {
  it('checks an unchecked store once, records it where every state dir beside it reads it, and refuses naming the failed probe', async () => {
    const dir = root();
    const store = new MemoryStore({ dropsIfNoneMatch: true });
    const a = storeWriteGuard({ stateDir: path.join(dir, 'a'), storeUrl: URL, store });
    const b = storeWriteGuard({ stateDir: path.join(dir, 'b'), storeUrl: URL, store });
    const first = await batonErrorOf(a());
    expect(first).toMatchObject({
      code: 'refused',
      reason: 'store-unenforced',
      changed: 'Nothing was written.',
    });
    expect(first.what).toContain('the create-only (If-None-Match: *) probe failed');
    expect(first.next).toContain('--store-unenforced');
    expect(first.next).not.toContain(unenforcedOverrideValue(URL));
    // b never ran a check: it reads a's record and refuses the same way, without probing.
    expect((await batonErrorOf(b())).reason).toBe('store-unenforced');
    expect(store.calls.filter((c) => c.op === 'check')).toHaveLength(1);
    expect(store.calls.filter((c) => c.op === 'put')).toHaveLength(0);
    expect(await readStoreCheck(path.join(dir, 'b'), URL)).toMatchObject({
      enforced: false,
      failed: ['create-only'],
    });
  });

  it('lets the write go ahead on a store recorded as enforcing, and never trusts a record of another store', async () => {
    const dir = root();
    const store = new MemoryStore({ enforcesPreconditions: false });
    await writeStoreCheck(path.join(dir, 'a'), URL, { enforced: true, failed: [], detail: '' }, new Date());
    await storeWriteGuard({ stateDir: path.join(dir, 'a'), storeUrl: URL, store })();
    expect(store.calls).toEqual([]);
    const other = await batonErrorOf(
      storeWriteGuard({ stateDir: path.join(dir, 'a'), storeUrl: `${URL}&x=1`, store })(),
    );
    expect(other.reason).toBe('store-unenforced');
  });

  it('the override goes ahead only with the value bound to this store; a wrong one is a usage error naming where to read it', async () => {
    const dir = root();
    const store = new MemoryStore({ dropsIfMatch: true });
    await storeWriteGuard({
      stateDir: path.join(dir, 'a'),
      storeUrl: URL,
      store,
      override: unenforcedOverrideValue(URL),
    })();
    expect(store.calls).toEqual([]);
    const wrong = await batonErrorOf(
      storeWriteGuard({
        stateDir: path.join(dir, 'a'),
        storeUrl: URL,
        store,
        override: unenforcedOverrideValue(`${URL}/other`),
      })(),
    );
    expect(wrong).toMatchObject({ code: 'usage', changed: 'Nothing was written.' });
    expect(wrong.next).toContain('baton store check');
    // The command is data, rendered with the operator's global flags at the edge.
    expect(wrong.said).toContainEqual(nextStep('store check'));
    expect(wrong.lines(suggester({ store: URL }, false)).join('\n')).toContain(
      `\`baton --store '${URL}' store check\``,
    );
    expect(wrong.what).not.toContain(unenforcedOverrideValue(URL));
  });
});
