/**
 * Hand-built reads for flow and view tests: both sides as the contracts describe them, with
 * fingerprints in the real shape. The rules that produce these are proven elsewhere (and the
 * end-to-end tests run the real readers); here they only feed the flows and screens.
 */
import { outside } from '../../src/outside-text.js';
import { BatonError } from '../../src/errors.js';
import { asFingerprint, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { decide } from '../../src/share/decide.js';
import type { LocalAuthority, PairSummary } from '../../src/authority/types.js';
import type { PublishedAuthority } from '../../src/share/types.js';
import type { LockProbe, StatusReport, StoreCheckRecord } from '../../src/app/status-report.js';

export const STATE_DIR = '/var/lib/baton/d1';
export const STORE_URL = 'file:///srv/baton-store';
export const LOCATION = '/srv/baton-store/authority.json';

export function fp(body: string): Fingerprint {
  const f = asFingerprint(`SHA256:${body}`);
  if (!f) throw new Error(`not a fingerprint body: ${body}`);
  return f;
}

export const FP_A = fp('Ab3dEf7hIj9kLmN0pQr5tUv+wXy/z12345678901234');
export const FP_B = fp('Zb3dEf8hIj9kLmN0pQr5tUv+wXy/z12345678901299');
export const FP_OLD = fp('0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0');

export function pair(fingerprint: Fingerprint, replaces?: Fingerprint): PairSummary {
  return {
    fingerprint,
    notBefore: new Date('2026-11-30T09:00:00Z'),
    notAfter: new Date('2036-11-28T09:00:00Z'),
    replaces,
    serialHex: '0a0b0c',
  };
}

export const local = {
  fresh: (): LocalAuthority => ({ state: 'fresh', stateDir: STATE_DIR, unexpected: [] }),
  lost: (): LocalAuthority => ({ state: 'lost', stateDir: STATE_DIR, unexpected: [] }),
  whole: (fingerprint: Fingerprint, previous?: Fingerprint): LocalAuthority => ({
    state: 'whole',
    stateDir: STATE_DIR,
    current: pair(fingerprint, previous),
    previous: previous ? pair(previous) : undefined,
    markerMissing: false,
    repairedTear: false,
    unexpected: [],
  }),
  half: (): LocalAuthority => ({
    state: 'blocked',
    stateDir: STATE_DIR,
    problem: 'half-initialised',
    error: new BatonError('refused', {
      what: 'ca.key is present but ca.crt is missing: the authority is half-initialised.',
      where: `${STATE_DIR}/ca/ca.crt`,
      next: 'Restore ca.crt from a backup; baton never repairs this by minting.',
    }),
    unexpected: [],
  }),
};

export const published = {
  none: (): PublishedAuthority => ({ state: 'none', location: LOCATION }),
  present: (
    fingerprint: Fingerprint,
    previous: Fingerprint | null = null,
    sealed = false,
  ): PublishedAuthority => ({
    state: 'present',
    location: LOCATION,
    etag: '"etag-1"',
    header: {
      format: 'baton.authority/1',
      deployment: 'd1',
      fingerprint,
      previousFingerprint: previous,
      publishedAt: outside('2026-11-30T09:30:00Z'),
      publishedBy: outside('ctl-a'),
    },
    sealed,
    current: sealed ? undefined : pair(fingerprint, previous ?? undefined),
    previous: previous && !sealed ? pair(previous) : undefined,
  }),
  unreachable: (): PublishedAuthority => ({
    state: 'unreadable',
    location: 's3://bucket/prefix/authority.json',
    error: new BatonError('failed', {
      what: 'The store could not be reached (connect ECONNREFUSED 127.0.0.1:9).',
      where: 's3://bucket/prefix/authority.json',
      next: 'Check the endpoint and network, then read again.',
      reason: 'unreachable',
    }),
  }),
};

export function report(
  l: LocalAuthority,
  p: PublishedAuthority,
  extra: { readonly lock?: LockProbe; readonly storeCheck?: StoreCheckRecord } = {},
): StatusReport {
  return {
    deployment: 'd1',
    stateDir: STATE_DIR,
    storeUrl: STORE_URL,
    local: l,
    published: p,
    storeCheck: extra.storeCheck,
    lock: extra.lock ?? { state: 'free' },
    verdict: decide(l, p),
    readAt: new Date('2026-11-30T10:00:00Z'),
  };
}

/** One read per row of the decision table that the screens must show. */
export const READS = {
  inSync: () =>
    report(local.whole(FP_A), published.present(FP_A), {
      storeCheck: {
        store: STORE_URL,
        enforced: true,
        detail: 'create-only refused a second write',
        checkedAt: '2026-11-30T09:45:00Z',
      },
    }),
  firstController: () => report(local.fresh(), published.none()),
  adopt: () => report(local.fresh(), published.present(FP_A)),
  adoptLost: () => report(local.lost(), published.present(FP_A)),
  publish: () => report(local.whole(FP_A), published.none()),
  leftBehind: () => report(local.whole(FP_OLD), published.present(FP_A, FP_OLD)),
  ahead: () => report(local.whole(FP_A, FP_OLD), published.present(FP_OLD)),
  unrelated: () => report(local.whole(FP_B), published.present(FP_A)),
  blockedHalf: () => report(local.half(), published.present(FP_A)),
  blockedLost: () => report(local.lost(), published.none()),
  unreachable: () => report(local.whole(FP_A), published.unreachable()),
  sealed: () => report(local.whole(FP_A), published.present(FP_A, null, true)),
} as const;
