/**
 * What an operator reads when an install fails half-way through a force or a first-controller
 * walk. The real install is replaced for ONE call (the module is otherwise the real authority
 * layer): the failure is a disk that fills up after ca/ was set aside or after the publish.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type * as AuthorityModule from '../../src/authority/index.js';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatonError } from '../../src/errors.js';

const failInstall = vi.hoisted(() => ({ next: false }));

vi.mock('../../src/authority/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof AuthorityModule>();
  return {
    ...real,
    installAuthority: async (...args: Parameters<typeof real.installAuthority>) => {
      if (failInstall.next) {
        failInstall.next = false;
        throw new BatonError('failed', {
          what: 'No space left on device while writing ca.key.',
          where: args[0],
        });
      }
      return real.installAuthority(...args);
    },
  };
});

const { readLocalAuthority, rotateAuthority, systemClock, withAuthorityLock } =
  await import('../../src/authority/index.js');
const { adopt, firstController, force, look, publish } = await import('../../src/share/actions.js');
const { MemoryStore } = await import('../helpers/memory-store.js');
const { makeTempDir } = await import('../helpers/fs-snapshot.js');
const { batonErrorOf } = await import('../helpers/baton-error.js');

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const cleanups: (() => void)[] = [];
afterEach(() => {
  failInstall.next = false;
  while (cleanups.length) cleanups.pop()!();
});

async function host(store: InstanceType<typeof MemoryStore>, name: string) {
  const { dir, cleanup } = makeTempDir(`baton-opsfail-${name}-`);
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  await withAuthorityLock(stateDir, async () => undefined);
  return { stateDir, deployment: DEPLOYMENT, store, clock: systemClock, host: name, noSeal: true };
}

describe('an install that fails part-way', () => {
  it('after a force set ca/ aside, the failure names where the old authority went, and it is intact there', async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    await firstController(a);
    const b = await host(store, 'ctl-b');
    await adopt(b);
    await rotateAuthority(a.stateDir, DEPLOYMENT);
    await publish(a);
    const oldKey = readFileSync(path.join(b.stateDir, 'ca', 'ca.key'));
    const seen = (await look(b)).verdict;
    failInstall.next = true;
    const error = await batonErrorOf(force(b, { seen }));
    expect(error).toMatchObject({ code: 'failed', where: path.join(b.stateDir, 'ca') });
    expect(error.what).toContain('No space left on device');
    // The one directory the force set aside, found on disk: the failure must name it.
    const asides = readdirSync(b.stateDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name.startsWith('ca.superseded-'))
      .map((entry) => entry.name);
    expect(asides).toHaveLength(1);
    const aside = path.join(b.stateDir, asides[0]!);
    expect(readFileSync(path.join(aside, 'ca.key'))).toEqual(oldKey);
    expect(error.changed).toContain(`intact in ${aside}`);
    expect(error.next).toContain(aside);
  });

  it('after a first controller published, the failure says the store holds the new authority and how to adopt it', async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    failInstall.next = true;
    const error = await batonErrorOf(firstController(a));
    expect(error.code).toBe('failed');
    expect(error.changed).toContain(store.location);
    expect(error.next).toContain('baton sync');
    expect(store.document).toBeDefined();
    // The host holds nothing yet, so the next walk adopts the published authority: still one.
    expect((await readLocalAuthority(a.stateDir, DEPLOYMENT)).state).toBe('fresh');
    const outcome = await adopt(a);
    expect(outcome.kind).toBe('installed');
  });
});
