/**
 * Which sync flag applies to which verdict, as the share layer decides it (the CLI suites
 * check the same refusals end to end, on a directory store and on moto).
 */
import { describe, expect, it } from 'vitest';
import {
  checkSyncFlags,
  conflictingFlags,
  syncBindings,
  type SyncActionFlags,
} from '../../src/share/sync-flags.js';
import type { ShareContext } from '../../src/share/share-context.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import type { Look, Verdict } from '../../src/share/types.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import type { BatonError } from '../../src/errors.js';

const MINE = 'SHA256:mine' as Fingerprint;
const THEIRS = 'SHA256:theirs' as Fingerprint;
const share = {
  store: { location: 's3://bucket/authority.json' },
  sealKey: undefined,
} as unknown as ShareContext;
const look = (verdict: Verdict): Look =>
  ({ verdict, local: { state: 'fresh' }, published: { state: 'none' } }) as unknown as Look;

const verdicts: Record<string, Verdict> = {
  adopt: { kind: 'adopt', published: THEIRS, lostMarker: false },
  publish: { kind: 'publish', local: MINE },
  'in-sync': { kind: 'in-sync', fingerprint: MINE },
  'refuse, siblings': {
    kind: 'refuse',
    local: MINE,
    published: THEIRS,
    lineage: { kind: 'siblings', parent: 'SHA256:parent' as Fingerprint },
    caDir: '/state/ca',
  },
  'refuse, ahead': {
    kind: 'refuse',
    local: MINE,
    published: THEIRS,
    lineage: { kind: 'ahead', chain: [MINE] },
    caDir: '/state/ca',
  },
  'refuse, unrelated': {
    kind: 'refuse',
    local: MINE,
    published: THEIRS,
    lineage: { kind: 'unrelated' },
    caDir: '/state/ca',
  },
  'refuse, left behind proved': {
    kind: 'refuse',
    local: MINE,
    published: THEIRS,
    lineage: { kind: 'left-behind', chain: [THEIRS, MINE], proof: { kind: 'proved' } },
    caDir: '/state/ca',
  },
  'refuse, left behind claimed': {
    kind: 'refuse',
    local: MINE,
    published: THEIRS,
    lineage: {
      kind: 'left-behind',
      chain: [THEIRS, MINE],
      proof: { kind: 'claimed', reason: 'no-signature' },
    },
    caDir: '/state/ca',
  },
  'first-controller': { kind: 'first-controller' },
};

/** The refusal of `flags` on `verdict` (fails the test when there is none). */
function misuse(verdict: string, flags: SyncActionFlags): Promise<BatonError> {
  return batonErrorOf(Promise.resolve().then(() => checkSyncFlags(share, look(verdicts[verdict]!), flags)));
}

describe('sync flags', () => {
  it('two flags asking for different actions are refused before anything is read, naming both', () => {
    const error = conflictingFlags({ force: true, push: true });
    expect(error).toMatchObject({ code: 'usage', changed: 'Nothing was read or written.' });
    expect(error!.what).toContain('--force and --push');
    expect(conflictingFlags({ push: true, unseal: true })).toBeUndefined();
  });

  it('each flag applies to its verdict only; elsewhere exit 2 naming the verdict and what plain sync would do', async () => {
    const allowed: [string, SyncActionFlags][] = [
      ['refuse, siblings', { force: true }],
      ['refuse, ahead', { force: true }],
      ['refuse, ahead', { push: true }],
      ['refuse, siblings', { push: true, confirm: ['theirs'] }],
      ['refuse, unrelated', { push: true }],
      ['refuse, left behind claimed', { push: true }],
      ['first-controller', { firstController: true }],
    ];
    for (const [verdict, flags] of allowed)
      expect(() => checkSyncFlags(share, look(verdicts[verdict]!), flags)).not.toThrow();

    const force = await misuse('adopt', { force: true });
    expect(force).toMatchObject({
      code: 'usage',
      where: 's3://bucket/authority.json',
      changed: 'Nothing was written.',
    });
    expect(force.what).toContain('--force applies only when sync refuses');
    expect(force.next).toContain(`Without --force, sync would adopt the published ${THEIRS}`);

    // Over a sibling, an unbound --push lost the race to publish a rotation of the same parent:
    // exit 6, never an overwrite; the bound one (checked against PUBLISHED 8 next) is a choice.
    const sibling = await misuse('refuse, siblings', { push: true });
    expect(sibling).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      changed: 'Nothing was written.',
    });
    expect(sibling.what).toContain('Another controller published its own rotation');
    expect(JSON.stringify(sibling.next)).toContain('PUBLISHED 8');
    // Publishing over an authority PROVED to have replaced this host's would roll the fleet back.
    const push = await misuse('refuse, left behind proved', { push: true });
    expect(push.code).toBe('usage');
    expect(push.what).toContain('--push applies only when this host is not PROVED behind');
    expect(push.what).toContain('roll the fleet back');
    expect(push.next).toContain('sync would refuse and change nothing');

    const first = await misuse('publish', { firstController: true });
    expect(first.what).toContain(
      '--first-controller applies only when nothing is published and this host holds no authority',
    );

    const unseal = await misuse('publish', { unseal: true });
    expect(unseal.what).toContain('--unseal applies only with --push or --replace-unreadable');
    expect(unseal.next).toContain(`sync would publish this host's ${MINE}`);

    const replace = await misuse('in-sync', { replaceUnreadable: true });
    expect(replace.what).toContain(
      '--replace-unreadable applies only when the published document was read and cannot be used',
    );
  });

  it('binds each irreversible step to its value: LOCAL 8 for --force, PUBLISHED 8 for a push over, nothing for a push ahead', () => {
    const local = 'SHA256:Ab3dEf9hIjk' as Fingerprint;
    const published = 'SHA256:zY9xWv8uTsr' as Fingerprint;
    const siblings: Verdict = {
      kind: 'refuse',
      local,
      published,
      lineage: { kind: 'siblings', parent: 'SHA256:p' as Fingerprint },
      caDir: '/c',
    };
    const ahead: Verdict = {
      kind: 'refuse',
      local,
      published,
      lineage: { kind: 'ahead', chain: [local, published] },
      caDir: '/c',
    };
    expect(syncBindings(look(siblings), { force: true }).map((b) => [b.step, b.expected])).toEqual([
      ['force', 'Ab3dEf9h'],
    ]);
    expect(syncBindings(look(siblings), { push: true }).map((b) => [b.step, b.expected])).toEqual([
      ['push-over', 'zY9xWv8u'],
    ]);
    expect(syncBindings(look(ahead), { push: true })).toEqual([]);
    expect(syncBindings(look(ahead), { push: true, unseal: true }).map((b) => b.expected)).toEqual([
      'unseal',
    ]);
    const bad = {
      verdict: { kind: 'blocked', why: 'x', next: 'y', unreadable: 'unusable' },
      local: { state: 'whole' },
      published: { state: 'unreadable', etag: '"9f86d081884c7d65"' },
    } as unknown as Look;
    expect(syncBindings(bad, { replaceUnreadable: true }).map((b) => [b.step, b.expected])).toEqual([
      ['replace-unreadable', '9f86d081'],
    ]);
  });
});
