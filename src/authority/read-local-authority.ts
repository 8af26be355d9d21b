import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { forceAgainStep, nextStep, type Said } from '../next-step.js';
import { inspectPair, keyFingerprint, parseCertificate, type PairFault } from '../pki/inspect-pair.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { faultText, problemOf, summaryOf, withKeyFormat } from './check-pair.js';
import { layoutOf, MARKER_FILE, ROTATION_FILES, type AuthorityLayout } from './layout.js';
import { readStrict, type FileRead } from './read-strict.js';
import { readSetAsideAuthorities } from './set-aside-authorities.js';
import { AUTHORITY_FILES, type LocalAuthority, type LocalProblem, type PairSummary } from './types.js';
import { markerDeployment } from './write-marker.js';

type RetireLeftover = {
  readonly file: 'ca-previous.crt' | 'ca-previous.key';
  readonly fingerprint: Fingerprint;
};

/** Everything one pass over the state dir saw, before any of it is interpreted. */
export interface RawAuthority {
  readonly caDir:
    | { readonly kind: 'absent' }
    | { readonly kind: 'error'; readonly reason: string }
    | { readonly kind: 'dir'; readonly entries: readonly string[] };
  readonly cert: FileRead;
  readonly key: FileRead;
  readonly previousKey: FileRead;
  readonly previousCert: FileRead;
  readonly marker: FileRead;
}

/** A classified read plus the bytes it classified, so a writer acts on exactly what it judged. */
export interface AuthorityRead {
  readonly local: LocalAuthority;
  readonly raw: RawAuthority;
  /** The key that pairs with ca.crt: ca.key, or ca-previous.key when the tear was repaired. */
  readonly currentKey: Uint8Array | undefined;
}

/**
 * ca.crt is read BEFORE ca.key, and the previous pair after both. A rotation writes the
 * previous pair first and renames the key before the certificate, so the only tear a reader
 * can see is "new key beside old cert" — and the old key is then already in ca-previous.key.
 */
export async function readRaw(stateDir: string): Promise<RawAuthority> {
  const l = layoutOf(stateDir);
  const caDir = await listCaDir(l.caDir);
  const cert = await readStrict(l.cert, { secret: false });
  const key = await readStrict(l.key, { secret: true });
  const previousKey = await readStrict(l.previousKey, { secret: true });
  const previousCert = await readStrict(l.previousCert, { secret: false });
  const marker = await readStrict(l.marker, { secret: false });
  return { caDir, cert, key, previousKey, previousCert, marker };
}

async function listCaDir(caDir: string): Promise<RawAuthority['caDir']> {
  try {
    const stat = await lstat(caDir);
    if (!stat.isDirectory())
      return {
        kind: 'error',
        reason: stat.isSymbolicLink() ? 'it is a symbolic link, not a directory' : 'it is not a directory',
      };
    return { kind: 'dir', entries: (await readdir(caDir)).sort() };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'error', reason: code ?? String(error) };
  }
}

/** Reader for callers that hold ca.lock (may see the torn read and pair it exactly). */
export async function readLocalAuthority(stateDir: string, deployment: string): Promise<LocalAuthority> {
  return (await readAuthority(stateDir, deployment)).local;
}

export async function readAuthority(stateDir: string, deployment: string): Promise<AuthorityRead> {
  const raw = await readRaw(stateDir);
  return classify(raw, stateDir, deployment);
}

const ATTEMPTS = 3;

/**
 * Unlocked reader for status: two identical passes, at most 3 tries, else 'changing'. A status
 * view takes no lock (it must never make a failover wait), so it can only trust what it saw
 * twice.
 */
export async function snapshotLocalAuthority(
  stateDir: string,
  deployment: string,
  /** Test seam: the pass to repeat (default readRaw). */
  opts?: { readonly readPass?: (stateDir: string) => Promise<RawAuthority> },
): Promise<LocalAuthority> {
  const pass = opts?.readPass ?? readRaw;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const first = await pass(stateDir);
    const second = await pass(stateDir);
    if (sameRaw(first, second)) return (await classify(second, stateDir, deployment)).local;
  }
  const l = layoutOf(stateDir);
  return blocked(
    stateDir,
    'changing',
    unexpectedOf(undefined),
    new BatonError('refused', {
      what: `The authority changed while it was being read (${ATTEMPTS} attempts saw different files).`,
      where: l.caDir,
      next: 'Another baton is probably rotating or installing it; look again in a moment.',
      changed: 'Nothing was written.',
    }),
  );
}

export function sameRaw(a: RawAuthority, b: RawAuthority): boolean {
  return rawKey(a) === rawKey(b);
}

function rawKey(raw: RawAuthority): string {
  const file = (f: FileRead) =>
    f.kind === 'bytes'
      ? `b:${Buffer.from(f.bytes).toString('base64')}`
      : `${f.kind}:${'reason' in f ? f.reason : ''}`;
  const dir =
    raw.caDir.kind === 'dir'
      ? `d:${raw.caDir.entries.join('/')}`
      : `${raw.caDir.kind}:${'reason' in raw.caDir ? raw.caDir.reason : ''}`;
  return [
    dir,
    file(raw.cert),
    file(raw.key),
    file(raw.previousKey),
    file(raw.previousCert),
    file(raw.marker),
  ].join('|');
}

const KNOWN_IN_CA = new Set<string>([...AUTHORITY_FILES.filter((n) => n !== MARKER_FILE), ...ROTATION_FILES]);

/** Names in ca/ that are no part of an authority: reported, never read, never published. */
function unexpectedOf(entries: readonly string[] | undefined): readonly string[] {
  return (entries ?? []).filter((name) => !KNOWN_IN_CA.has(name)).map((name) => `ca/${name}`);
}

function blocked(
  stateDir: string,
  problem: LocalProblem,
  unexpected: readonly string[],
  error: BatonError,
): LocalAuthority {
  return { state: 'blocked', stateDir, problem, error, unexpected };
}

/** Turns one raw pass into the state docs/authority-on-disk.md names. Pure over `raw` (plus crypto). */
export async function classify(
  raw: RawAuthority,
  stateDir: string,
  deployment: string,
): Promise<AuthorityRead> {
  const l = layoutOf(stateDir);
  const unexpected = unexpectedOf(raw.caDir.kind === 'dir' ? raw.caDir.entries : undefined);
  const refuse = (
    problem: LocalProblem,
    what: string,
    where: string,
    next: string | Said,
  ): AuthorityRead => ({
    raw,
    currentKey: undefined,
    local: blocked(
      stateDir,
      problem,
      unexpected,
      new BatonError('refused', { what, where, next, changed: 'Nothing was written.' }),
    ),
  });
  /** A key/certificate pair (current or previous) that fails its checks. */
  const refusePair = (
    fault: PairFault,
    labels: { readonly key: string; readonly cert: string },
  ): AuthorityRead =>
    refuse(problemOf(fault), faultText(fault, labels, deployment), l.caDir, pairNext(fault.kind));

  if (raw.caDir.kind === 'error') {
    return refuse(
      'unreadable',
      `The authority directory cannot be read: ${raw.caDir.reason}.`,
      l.caDir,
      CANNOT_READ_NEXT,
    );
  }
  for (const [file, read, secret] of filesOf(raw, l)) {
    if (read.kind === 'error')
      return refuse(
        'unreadable',
        `${path.basename(file)} cannot be read (${read.reason}).`,
        file,
        CANNOT_READ_NEXT,
      );
    if (read.kind === 'unsafe') {
      return secret
        ? refuse(
            'unsafe-key',
            `The key file ${path.basename(file)} is unsafe: it ${read.reason}.`,
            file,
            unsafeKeyNext(file),
          )
        : refuse(
            'unreadable',
            `${path.basename(file)} cannot be used: it ${read.reason}.`,
            file,
            `Replace it with the regular file itself (mode 0644), then look again.`,
          );
    }
  }

  const markerText = raw.marker.kind === 'bytes' ? markerDeployment(raw.marker.bytes) : undefined;
  if (markerText !== undefined && markerText !== deployment) {
    return refuse(
      'foreign',
      `The marker ${MARKER_FILE} names deployment "${markerText}", not "${deployment}".`,
      l.marker,
      'Check --deployment and --state-dir: this state dir belongs to another deployment.',
    );
  }

  const bytesOf = (f: FileRead) => (f.kind === 'bytes' ? f.bytes : undefined);
  const [cert, key, previousCert, previousKey] = [
    bytesOf(raw.cert),
    bytesOf(raw.key),
    bytesOf(raw.previousCert),
    bytesOf(raw.previousKey),
  ];

  if (!cert && !key) {
    if (previousCert || previousKey) {
      return refuse(
        'half-initialised',
        `The authority is half-initialised: ca/ca.crt and ca/ca.key are missing but ${[previousCert && 'ca/ca-previous.crt', previousKey && 'ca/ca-previous.key'].filter(Boolean).join(' and ')} ${previousCert && previousKey ? 'are' : 'is'} present.`,
        l.caDir,
        await halfNext(stateDir),
      );
    }
    const local: LocalAuthority =
      markerText !== undefined
        ? { state: 'lost', stateDir, unexpected }
        : { state: 'fresh', stateDir, unexpected };
    return { raw, currentKey: undefined, local };
  }
  if (!cert || !key) {
    return refuse(
      'half-initialised',
      `The authority is half-initialised: ca/${cert ? 'ca.crt' : 'ca.key'} is present but ca/${cert ? 'ca.key' : 'ca.crt'} is missing.`,
      l.caDir,
      await halfNext(stateDir),
    );
  }

  // The current pair, with the one repair a rotation's tear allows.
  let inspection = await inspectPair(key, cert, deployment);
  let currentKey = key;
  let repairedTear = false;
  if (
    !inspection.ok &&
    inspection.fault.kind === 'mismatched' &&
    previousKey &&
    previousCert &&
    sameBytes(previousCert, cert)
  ) {
    // EXACTLY, NEVER TOLERANTLY: the repair applies only when ca-previous.crt is byte-for-byte
    // the ca.crt that was read and ca-previous.key pairs with it — the footprint of a rotation
    // that renamed its key and not yet its certificate, and nothing else.
    const repaired = await inspectPair(previousKey, cert, deployment);
    if (repaired.ok) {
      inspection = repaired;
      currentKey = previousKey;
      repairedTear = true;
    }
  }
  if (!inspection.ok) {
    return refusePair(inspection.fault, { key: 'ca/ca.key', cert: 'ca/ca.crt' });
  }
  const current = withKeyFormat(summaryOf(inspection.facts), currentKey);
  const extraUnexpected: string[] = [];

  // The previous pair: an overlap, a rotation's copies, a retire's remainder, or half a pair.
  const entries = raw.caDir.kind === 'dir' ? raw.caDir.entries : [];
  const asideFiles = ROTATION_FILES.filter((n) => entries.includes(n));
  let pending: 'rotate' | 'retire' | undefined = repairedTear || asideFiles.length > 0 ? 'rotate' : undefined;
  let previous: PairSummary | undefined;
  let leftover: RetireLeftover | undefined;
  if (repairedTear) {
    previous = undefined; // ca-previous.* IS the current pair until the rotation finishes
  } else if (previousCert && previousKey) {
    const prior = await inspectPair(previousKey, previousCert, deployment);
    if (!prior.ok) {
      return refusePair(prior.fault, { key: 'ca/ca-previous.key', cert: 'ca/ca-previous.crt' });
    }
    if (prior.facts.fingerprint === current.fingerprint)
      pending = 'rotate'; // copies made, renames not yet
    else {
      previous = withKeyFormat(summaryOf(prior.facts), previousKey);
      // No rotation starts during an overlap, so *.new files beside one are no rotation's:
      // named as unexpected rather than sending the operator to a rotate that would refuse.
      if (asideFiles.length > 0) {
        pending = undefined;
        extraUnexpected.push(...asideFiles.map((n) => `ca/${n}`));
      }
    }
  } else if (previousCert) {
    const facts = parseCertificate(previousCert);
    if (sameBytes(previousCert, cert))
      pending = 'rotate'; // the copy of ca.crt, before the copy of the key
    else if (facts && current.replaces !== undefined && facts.fingerprint === current.replaces) {
      pending = 'retire';
      leftover = { file: 'ca-previous.crt', fingerprint: facts.fingerprint };
    } else {
      return refuse(
        'half-initialised',
        'The rotation overlap is half there: ca/ca-previous.crt is present but ca/ca-previous.key is missing.',
        l.caDir,
        HALF_PREVIOUS_NEXT,
      );
    }
  } else if (previousKey) {
    // The key alone: a rotation's copy of ca.key before the copy of the certificate (written in
    // that order because billet cannot start with a previous certificate and no key), or what a
    // retire left after removing the certificate first (billet's order). Anything else is half.
    const fingerprint = keyFingerprint(previousKey);
    if (sameBytes(previousKey, key)) pending = 'rotate';
    else if (
      fingerprint !== undefined &&
      current.replaces !== undefined &&
      fingerprint === current.replaces
    ) {
      pending = 'retire';
      leftover = { file: 'ca-previous.key', fingerprint };
    } else
      return refuse(
        'half-initialised',
        'The rotation overlap is half there: ca/ca-previous.key is present but ca/ca-previous.crt is missing.',
        l.caDir,
        HALF_PREVIOUS_NEXT,
      );
  }

  return {
    raw,
    currentKey,
    local: {
      state: 'whole',
      stateDir,
      current,
      previous,
      markerMissing: markerText === undefined,
      repairedTear,
      ...(pending ? { pending } : {}),
      ...(leftover ? { leftover } : {}),
      ...(!repairedTear && !previousCert !== !previousKey
        ? { alone: previousCert ? ('ca-previous.crt' as const) : ('ca-previous.key' as const) }
        : {}),
      unexpected: extraUnexpected.length > 0 ? [...unexpected, ...extraUnexpected].sort() : unexpected,
    },
  };
}

function filesOf(raw: RawAuthority, l: AuthorityLayout): Array<[string, FileRead, boolean]> {
  return [
    [l.cert, raw.cert, false],
    [l.key, raw.key, true],
    [l.previousCert, raw.previousCert, false],
    [l.previousKey, raw.previousKey, true],
    [l.marker, raw.marker, false],
  ];
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

const CANNOT_READ_NEXT =
  'Check the permissions and the disk, then look again. baton treats a file it cannot read as present, never as absent.';
/**
 * RESUMABLE BY THE COMMAND THAT WAS CUT SHORT. An adopt or a force writes the previous pair,
 * then ca.key, then ca.crt: cut short, it leaves exactly this, and the same sync finishes it
 * (proving every file is the published document's, byte for byte, or refusing). A force's old
 * authority is named where it sits, so "restore from a backup" is never the only word for it.
 */
async function halfNext(stateDir: string): Promise<Said> {
  const [setAside] = await readSetAsideAuthorities(stateDir);
  const sync = [
    nextStep('sync'),
    " again: it finishes the install when every file in ca/ is the published document's, byte for byte, and refuses otherwise. If not, restore the missing file from a backup; baton never repairs half an authority by minting.",
  ];
  if (!setAside) return ['If an adopt stopped part-way here, run ', ...sync];
  return [
    `If a sync --force stopped part-way here (it set the old authority ${setAside.fingerprint ?? '(its ca.crt cannot be read)'} aside in ${setAside.dir}), run it again as typed, `,
    forceAgainStep(setAside.dir),
    ', or plain ',
    ...sync,
  ];
}
const HALF_PREVIOUS_NEXT =
  'Restore the missing file of the previous pair from a backup: nodes may still trust the previous authority.';

function unsafeKeyNext(file: string): string {
  return `Make it a regular file (not a link) of at most 1 MiB, readable only by its owner (chmod 600 ${file}), then look again.`;
}

function pairNext(kind: string): Said {
  switch (kind) {
    case 'foreign':
      // No baton command sets a blocked authority aside (force applies to a whole one that
      // differs): the way out is by hand, and then an ordinary sync adopts.
      return [
        "Check --deployment and --state-dir. If this host must hold this deployment's authority, no baton command replaces a foreign one: move ca/ and authority-created aside by hand (e.g. to ca.superseded-manual), then adopt with ",
        nextStep('sync'),
        '.',
      ];
    case 'mismatched':
      return [
        'Restore the matching key or certificate from a backup; if this host should hold the published authority instead, move ca/ and authority-created aside by hand (no baton command does it for a broken pair), then adopt with ',
        nextStep('sync'),
        '.',
      ];
    default:
      return [
        'Restore the authority from a backup, or move ca/ and authority-created aside by hand (no baton command does it for a broken authority) and adopt the published one with ',
        nextStep('sync'),
        '.',
      ];
  }
}
