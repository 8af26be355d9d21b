import { outside } from '../../src/outside-text.js';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import type { LocalAuthority, LocalProblem, PairSummary } from '../../src/authority/types.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { allowedActions, decide, isInSync, lineageOf } from '../../src/share/decide.js';
import { DOCUMENT_FORMAT, type PublishedAuthority, type Verdict } from '../../src/share/types.js';
import { verdictWords } from '../../src/share/verdict-words.js';

// decide() is pure: its inputs are data, so the fixtures here are the reader's and the
// document's answers, built from distinct fingerprints (the real pairs are exercised by the
// operations and integration tests).
const STATE_DIR = '/var/lib/baton/d1';
const LOCATION = 'memory://d1/authority.json';

function fp(seed: string): Fingerprint {
  return `SHA256:${createHash('sha256').update(seed).digest('base64').replace(/=+$/, '')}` as Fingerprint;
}
const A = fp('authority A');
const B = fp('authority B');
const C = fp('authority C');

function pair(fingerprint: Fingerprint, replaces?: Fingerprint): PairSummary {
  return {
    fingerprint,
    replaces,
    notBefore: new Date('2026-01-01T00:00:00Z'),
    notAfter: new Date('2036-01-01T00:00:00Z'),
    serialHex: '01',
  };
}

const fresh: LocalAuthority = { state: 'fresh', stateDir: STATE_DIR, unexpected: [] };
const lost: LocalAuthority = { state: 'lost', stateDir: STATE_DIR, unexpected: [] };
function whole(current: PairSummary, previous?: PairSummary): LocalAuthority {
  return {
    state: 'whole',
    stateDir: STATE_DIR,
    current,
    previous,
    markerMissing: false,
    repairedTear: false,
    unexpected: [],
  };
}
function blocked(problem: LocalProblem): LocalAuthority {
  return {
    state: 'blocked',
    stateDir: STATE_DIR,
    problem,
    unexpected: [],
    error: new BatonError('refused', {
      what: `The local authority is ${problem}.`,
      where: `${STATE_DIR}/ca/ca.key`,
      next: `Repair ${problem} by hand.`,
    }),
  };
}

const none: PublishedAuthority = { state: 'none', location: LOCATION };
function present(opts: {
  fingerprint: Fingerprint;
  previous?: Fingerprint | null;
  replaces?: Fingerprint;
  sealed?: boolean;
}): PublishedAuthority {
  const sealed = opts.sealed ?? false;
  return {
    state: 'present',
    location: LOCATION,
    etag: '"etag-1"',
    sealed,
    header: {
      format: DOCUMENT_FORMAT,
      deployment: 'd1',
      fingerprint: opts.fingerprint,
      previousFingerprint: opts.previous ?? null,
      publishedAt: outside('2026-01-01T00:00:00Z'),
      publishedBy: outside('ctl-a'),
    },
    // A sealed document read without the key only has its header.
    current: sealed ? undefined : pair(opts.fingerprint, opts.replaces),
    previous: !sealed && opts.previous ? pair(opts.previous) : undefined,
  };
}
const unreadable: PublishedAuthority = {
  state: 'unreadable',
  location: LOCATION,
  error: new BatonError('refused', {
    what: 'The document carries a file named "ca.pem" that baton does not know.',
    where: LOCATION,
    next: 'Upgrade baton.',
  }),
};

const PROBLEMS: readonly LocalProblem[] = [
  'half-initialised',
  'mismatched',
  'not-ca',
  'foreign',
  'unsafe-key',
  'unreadable',
  'changing',
];

describe('decide: the fresh row', () => {
  it('a fresh host with nothing published is the first controller', () => {
    expect(decide(fresh, none)).toEqual({ kind: 'first-controller' });
  });
  it('a fresh host adopts whatever is published, whether or not another host holds the same', () => {
    expect(decide(fresh, present({ fingerprint: A }))).toEqual({
      kind: 'adopt',
      published: A,
      lostMarker: false,
    });
    expect(decide(fresh, present({ fingerprint: B, previous: A }))).toEqual({
      kind: 'adopt',
      published: B,
      lostMarker: false,
    });
  });
  it('a fresh host without the seal key is blocked by a sealed document: status and sync agree that adopting needs the key', () => {
    const verdict = decide(fresh, present({ fingerprint: A, sealed: true }));
    expect(verdict).toMatchObject({ kind: 'blocked', sealedWithoutKey: true });
    if (verdict.kind !== 'blocked') return;
    expect(verdict.why).toContain('sealed; this host has no seal key; adopting needs it');
    expect(verdict.why).toContain(A);
    expect(verdict.next).toContain('seal_key_file');
  });
  it('a whole host without the seal key still compares fingerprints of a sealed document: in sync, or refused with force needing the key', () => {
    expect(decide(whole(pair(A)), present({ fingerprint: A, sealed: true }))).toEqual({
      kind: 'in-sync',
      fingerprint: A,
    });
    expect(decide(whole(pair(B)), present({ fingerprint: A, sealed: true }))).toMatchObject({
      kind: 'refuse',
      sealedWithoutKey: true,
    });
  });
  it('a fresh host facing an unreadable document is blocked and told what is wrong with the document and where', () => {
    const verdict = decide(fresh, unreadable);
    expect(verdict.kind).toBe('blocked');
    expect(verdict).toMatchObject({ why: expect.stringContaining('"ca.pem"'), next: 'Upgrade baton.' });
  });
});

describe('decide: the lost row (marker present, ca/ empty)', () => {
  it('a lost host with nothing published is blocked, never minted over, and is told to restore or remove the marker on purpose', () => {
    const verdict = decide(lost, none);
    expect(verdict.kind).toBe('blocked');
    if (verdict.kind !== 'blocked') return;
    expect(verdict.why).toContain(`${STATE_DIR}/authority-created`);
    expect(verdict.why).toContain('nothing is published');
    expect(verdict.next).toMatch(/Restore ca\/ from a backup/);
    expect(verdict.next).toMatch(/remove the marker on purpose/);
  });
  it('a lost host adopts the published authority and the verdict says it had one before', () => {
    expect(decide(lost, present({ fingerprint: A }))).toEqual({
      kind: 'adopt',
      published: A,
      lostMarker: true,
    });
    expect(decide(lost, present({ fingerprint: B, previous: A }))).toEqual({
      kind: 'adopt',
      published: B,
      lostMarker: true,
    });
  });
  it('a lost host facing an unreadable document is blocked', () => {
    expect(decide(lost, unreadable).kind).toBe('blocked');
  });
});

describe('decide: the whole row', () => {
  it('a whole host with nothing published publishes its own', () => {
    expect(decide(whole(pair(A)), none)).toEqual({ kind: 'publish', local: A });
  });
  it('a whole host holding the published fingerprint is in sync', () => {
    const verdict = decide(whole(pair(A)), present({ fingerprint: A }));
    expect(verdict).toEqual({ kind: 'in-sync', fingerprint: A });
    expect(isInSync(verdict)).toBe(true);
  });
  it('a whole host in a rotation overlap is in sync when its current pair is the published one, and the words say the overlap is open', () => {
    const verdict = decide(whole(pair(B, A), pair(A)), present({ fingerprint: B, previous: A, replaces: A }));
    expect(verdict).toEqual({ kind: 'in-sync', fingerprint: B, previous: A });
    const words = verdictWords(verdict, { baton: 'baton --deployment d1' });
    expect(words.label).toBe('in sync');
    expect(words.next).not.toContain('Nothing to do');
    expect(words.next).toContain('A rotation overlap is open (the previous authority is still trusted)');
    expect(verdictWords(verdict, { fingerprints: true }).next).toContain(
      `the previous authority ${A} is still trusted`,
    );
    expect(words.next).toContain('`ca rotate` refuses');
    // Retiring deletes a key: the suggestion is bound, and pasted as printed it runs nothing.
    expect(words.next).toContain('baton --deployment d1 ca retire --confirm <PREVIOUS 8>');
    expect(words.next).not.toMatch(/ca retire$/);
    expect(verdictWords(decide(whole(pair(A)), present({ fingerprint: A }))).next).toBe('Nothing to do.');
  });
  it('a whole host facing an unreadable document is blocked', () => {
    expect(decide(whole(pair(A)), unreadable).kind).toBe('blocked');
  });
  it('fingerprints are compared exactly: one that differs only in case is a different authority, not the same', () => {
    const lookalike = A.replace(/[a-z]/, (ch) => ch.toUpperCase()) as Fingerprint;
    expect(lookalike).not.toBe(A);
    const verdict = decide(whole(pair(A)), present({ fingerprint: lookalike }));
    expect(verdict.kind).toBe('refuse');
    expect(isInSync(verdict)).toBe(false);
  });
});

describe('decide: a whole host that differs from the published one is refused, with the lineage in words', () => {
  const refusal = (verdict: Verdict) => {
    expect(verdict.kind).toBe('refuse');
    if (verdict.kind !== 'refuse') throw new Error('not a refusal');
    return verdict;
  };

  it('is LEFT BEHIND when its fingerprint is the published previous_fingerprint', () => {
    const verdict = refusal(decide(whole(pair(A)), present({ fingerprint: B, previous: A, replaces: A })));
    expect(verdict).toEqual({
      kind: 'refuse',
      local: A,
      published: B,
      caDir: `${STATE_DIR}/ca`,
      lineage: { kind: 'left-behind', chain: [B, A], proof: { kind: 'claimed', reason: 'no-signature' } },
    });
  });
  it("is LEFT BEHIND when only the published certificate's billet-replaces claim links them (the overlap was retired)", () => {
    const verdict = refusal(decide(whole(pair(A)), present({ fingerprint: B, previous: null, replaces: A })));
    expect(verdict.lineage.kind).toBe('left-behind');
  });
  it("is LEFT BEHIND through a sealed document's readable previous_fingerprint, without the key", () => {
    const verdict = refusal(decide(whole(pair(A)), present({ fingerprint: B, previous: A, sealed: true })));
    expect(verdict.lineage.kind).toBe('left-behind');
  });
  it('is AHEAD when it rotated away from the published authority and still holds it as its previous pair', () => {
    const verdict = refusal(decide(whole(pair(B, A), pair(A)), present({ fingerprint: A })));
    expect(verdict).toEqual({
      kind: 'refuse',
      local: B,
      published: A,
      lineage: { kind: 'ahead', chain: [B, A] },
      caDir: `${STATE_DIR}/ca`,
    });
  });
  it('is AHEAD when its certificate claims to replace the published one even after retiring the previous pair', () => {
    expect(refusal(decide(whole(pair(B, A)), present({ fingerprint: A }))).lineage.kind).toBe('ahead');
  });
  it('is AHEAD by a chain its own certificates record: rotate, retire, rotate with no publish between', () => {
    // C replaced B (ca-previous.*), and B's certificate names A, the published one.
    expect(refusal(decide(whole(pair(C, B), pair(B, A)), present({ fingerprint: A }))).lineage).toEqual({
      kind: 'ahead',
      chain: [C, B, A],
    });
  });
  it("is SIBLINGS when both rotated from the same parent, by either side's record", () => {
    expect(
      refusal(decide(whole(pair(B, A), pair(A)), present({ fingerprint: C, previous: A, replaces: A })))
        .lineage,
    ).toEqual({ kind: 'siblings', parent: A });
    expect(
      refusal(decide(whole(pair(B, A)), present({ fingerprint: C, previous: null, replaces: A }))).lineage,
    ).toEqual({ kind: 'siblings', parent: A });
  });
  it('is LEFT BEHIND by two rotations when the published side records the chain, signed (if at all) by another key', () => {
    const D = fp('authority D');
    const lineage = refusal(
      decide(whole(pair(A)), present({ fingerprint: C, previous: B, replaces: B })),
    ).lineage;
    expect(lineage.kind).toBe('unrelated'); // B → A is recorded nowhere
    const chained: PublishedAuthority = {
      ...(present({ fingerprint: C, previous: B, replaces: B }) as Extract<
        PublishedAuthority,
        { state: 'present' }
      >),
      previous: pair(B, A),
    };
    expect(refusal(decide(whole(pair(A)), chained)).lineage).toEqual({
      kind: 'left-behind',
      chain: [C, B, A],
      proof: { kind: 'claimed', reason: 'no-signature' },
    });
    expect(refusal(decide(whole(pair(D)), chained)).lineage.kind).toBe('unrelated');
  });
  it('is UNRELATED when nothing links the two (possibly the wrong deployment or store)', () => {
    expect(refusal(decide(whole(pair(A)), present({ fingerprint: B }))).lineage.kind).toBe('unrelated');
    // Two rotations apart with the middle link recorded nowhere is not a link baton can prove.
    expect(
      refusal(decide(whole(pair(A)), present({ fingerprint: C, previous: B, replaces: B }))).lineage.kind,
    ).toBe('unrelated');
    expect(refusal(decide(whole(pair(C, B), pair(B)), present({ fingerprint: A }))).lineage.kind).toBe(
      'unrelated',
    );
  });
  it('lineageOf answers the same question on its own', () => {
    const local = whole(pair(A));
    const published = present({ fingerprint: B, previous: A });
    if (local.state !== 'whole' || published.state !== 'present') throw new Error('fixture');
    expect(lineageOf(local, published).kind).toBe('left-behind');
  });
});

describe('decide: the blocked row', () => {
  for (const problem of PROBLEMS) {
    it(`a ${problem} local authority is blocked against every published state, naming what is wrong, where, and what to do`, () => {
      for (const published of [
        none,
        present({ fingerprint: A }),
        present({ fingerprint: B, previous: A }),
        unreadable,
      ]) {
        const verdict = decide(blocked(problem), published);
        expect(verdict.kind).toBe('blocked');
        if (verdict.kind !== 'blocked') return;
        expect(verdict.why).toContain(`The local authority is ${problem}.`);
        expect(verdict.why).toContain(`${STATE_DIR}/ca/ca.key`);
        expect(verdict.next).toBe(`Repair ${problem} by hand.`);
      }
    });
  }
  it('a blocked local authority is reported before an unreadable document: the host is what must be repaired first', () => {
    const verdict = decide(blocked('half-initialised'), unreadable);
    expect(verdict).toMatchObject({ kind: 'blocked', why: expect.stringContaining('half-initialised') });
  });
});

describe('allowedActions offers only what the table allows', () => {
  it("lists each verdict's actions, with leave always among them", () => {
    expect(allowedActions({ kind: 'first-controller' })).toEqual(['first-controller', 'leave']);
    expect(allowedActions({ kind: 'adopt', published: A, lostMarker: false })).toEqual(['adopt', 'leave']);
    expect(allowedActions({ kind: 'publish', local: A })).toEqual(['publish', 'leave']);
    expect(allowedActions({ kind: 'in-sync', fingerprint: A })).toEqual(['leave']);
    expect(allowedActions({ kind: 'blocked', why: 'x', next: 'y' })).toEqual(['leave']);
  });
  it('offers publish over a different document only to a host that is AHEAD, push-over where it is not proved behind; force is offered for every refusal', () => {
    const lineages = {
      ahead: { kind: 'ahead', chain: [A, B] },
      'left-behind': { kind: 'left-behind', chain: [B, A], proof: { kind: 'proved' } },
      siblings: { kind: 'siblings', parent: C },
      unrelated: { kind: 'unrelated' },
    } as const;
    const refuse = (lineage: keyof typeof lineages): Verdict => ({
      kind: 'refuse',
      local: A,
      published: B,
      lineage: lineages[lineage],
      caDir: `${STATE_DIR}/ca`,
    });
    // Either side may be kept where this host is not proved behind: force, or push-over (bound).
    expect(allowedActions(refuse('siblings'))).toEqual(['leave', 'force', 'push-over']);
    expect(allowedActions(refuse('ahead'))).toEqual(expect.arrayContaining(['publish', 'force', 'leave']));
    expect(allowedActions(refuse('ahead'))).not.toContain('push-over');
    expect(allowedActions(refuse('left-behind'))).not.toContain('publish');
    // PROVED left behind: pushing over it would roll the fleet back.
    expect(allowedActions(refuse('left-behind'))).toEqual(['leave', 'force']);
    expect(allowedActions(refuse('unrelated'))).not.toContain('publish');
    expect(allowedActions(refuse('unrelated'))).toEqual(['leave', 'force', 'push-over']);
    expect(allowedActions({ ...refuse('siblings'), sealedWithoutKey: true } as Verdict)).toEqual(['leave']);
  });
});
