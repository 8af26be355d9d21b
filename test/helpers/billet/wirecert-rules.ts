/**
 * THE SEED'S BILLET, NOT A LATER ONE: an independent model of how billet at commit b2b42c1a
 * (junioryono/billet b2b42c1a8c46622ae546bc75b7699be0be607411, the version with
 * internal/wireshare) starts on a state dir. Written from that commit's source, read function by
 * function; none of it is copied.
 *
 * THE START PATH. With an identity store (a deployment that shares its authority, which is what
 * baton's hosts are), billet's start first runs `adoptSharedAuthority` → wireshare.go `Adopt`
 * (replace = false) under the authority lock, and a failure there stops the start; then
 * `serveNodeWire` → rotation.go `LoadServing`; then a publish whose failure is only reported.
 * Without a store only `LoadServing` runs.
 *
 *   - wireshare.go `Adopt`: reads the local side with authority.go `ReadAuthority` → `validate`.
 *     `ErrAuthorityLost` (neither ca.crt nor ca.key, WHATEVER else ca/ holds) installs the
 *     document with authority.go `InstallAuthority`; another error stops the start ("this host's
 *     own authority cannot be read"); a whole local authority is `adoptOverExisting`: the same
 *     fingerprint is AdoptedAlreadyHeld, a different one stops the start (no --force at start).
 *   - authority.go `validate`: the current pair whole and `parsePair` (PEM, x509, SEC1 key, IsCA,
 *     self-signed, the key is the certificate's — NO torn-rotation repair, no deployment check);
 *     the previous pair whole or absent (a lone ca-previous.key OR ca-previous.crt is
 *     ErrHalfInitialised) and holding together; the marker present beside a complete authority.
 *   - authority.go `InstallAuthority`: writes in `AuthorityFiles` order — ca.key, ca.crt,
 *     ca-previous.key, ca-previous.crt, the marker — each O_EXCL (writeSecret / writePublic), and
 *     stops at the first name that exists: after baton's install wrote the marker and
 *     ca-previous.key, billet writes the current pair and stops (the chained crash: a later adopt over a half-installed dir).
 *   - rotation.go `LoadServing` → `readServing`: wirecert.go `LoadOrCreateCA` (ca.crt then
 *     ca.key; `repairPair` for the torn rotation only; neither file: day one without the marker,
 *     ErrAuthorityLost with it; one of them: ErrHalfInitialised), then ca-previous.crt: absent →
 *     the current authority presents; present → its key absent presents with the current one
 *     (a half-published rotation or a half-done retire), present → `parseCA` must hold.
 *     Then `stillMatches` re-reads ca.crt, ca-previous.crt and the PRESENCE of ca-previous.key:
 *     a lone ca-previous.key (no certificate) was never counted in the snapshot, so every read
 *     is "changed underneath" and after `servingReadAttempts` (3) the start fails — "ca.crt
 *     changed underneath this read 3 times running", as observed on that build.
 *   - rotation.go `Retire`: ca-previous.KEY first, then ca-previous.crt (each unlink synced).
 *
 * A LATER billet reads differently (test/helpers/crash-points.ts BILLET_TABLE); the crash-point
 * harness reads every state by both.
 */
import { closeSync, constants, lstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { inspectPair, parseCertificate } from '../../../src/pki/inspect-pair.js';
import { pemDecode } from '../../../src/pki/pem.js';

export type WirecertVerdict = 'starts' | 'mints' | 'refuses';

export interface WirecertReading {
  readonly verdict: WirecertVerdict;
  /** The function and rule that decided, as the harness prints it. */
  readonly rule: string;
}

/** A published document as billet's Adopt decodes it: allowlisted names → bytes, and its fingerprint field. */
export interface SeedStore {
  readonly files: Readonly<Record<string, Uint8Array>>;
  readonly fingerprint: string;
}

type FileRead = 'read' | 'absent' | 'error';

/** readPublic / readSecret (wirecert.go): what a file is to billet before its bytes are parsed. */
function fileRead(file: string, secret: boolean): FileRead {
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return 'absent';
  }
  if (st.isSymbolicLink() || !st.isFile() || st.size > 1 << 20) return 'error';
  if (secret && (st.mode & 0o077) !== 0) return 'error';
  return 'read';
}

/** parsePair (authority.go): SEC1 key only (x509.ParseECPrivateKey), a self-signed CA, the key is the certificate's. */
async function parsePair(certFile: string, keyFile: string): Promise<boolean> {
  const [key, cert] = [readFileSync(keyFile), readFileSync(certFile)];
  if (!pemDecode('EC PRIVATE KEY', key)) return false;
  // No deployment is asked here: the certificate's own O stands in for it.
  return (await inspectPair(key, cert, parseCertificate(cert)?.organization ?? '')).ok;
}

/** parseCA (wirecert.go): parsePair, and O = the deployment. */
async function parseCA(certFile: string, keyFile: string, deployment: string): Promise<boolean> {
  const key = readFileSync(keyFile);
  if (!pemDecode('EC PRIVATE KEY', key)) return false;
  return (await inspectPair(key, readFileSync(certFile), deployment)).ok;
}

const AUTHORITY_FILES = [
  'ca.key',
  'ca.crt',
  'ca-previous.key',
  'ca-previous.crt',
  'authority-created',
] as const;
const SECRET = new Set(['ca.key', 'ca-previous.key']);

function pathOf(stateDir: string, name: string): string {
  return name === 'authority-created' ? path.join(stateDir, name) : path.join(stateDir, 'ca', name);
}

type Validated =
  | { readonly kind: 'whole'; readonly fingerprint: string }
  | { readonly kind: 'lost' }
  | { readonly kind: 'refused'; readonly rule: string };

/** ReadAuthority → validate (authority.go). */
async function readAuthority(stateDir: string): Promise<Validated> {
  const read = Object.fromEntries(
    AUTHORITY_FILES.map((name) => [name, fileRead(pathOf(stateDir, name), SECRET.has(name))]),
  ) as Record<(typeof AUTHORITY_FILES)[number], FileRead>;
  const failed = AUTHORITY_FILES.find((name) => read[name] === 'error');
  if (failed) return { kind: 'refused', rule: `ReadAuthority: read ${failed}` };
  const [key, crt] = [read['ca.key'] === 'read', read['ca.crt'] === 'read'];
  if (!key && !crt) return { kind: 'lost' };
  if (key !== crt) return { kind: 'refused', rule: 'validate: ErrHalfInitialised (the current pair)' };
  const at = (name: string) => pathOf(stateDir, name);
  if (!(await parsePair(at('ca.crt'), at('ca.key'))))
    return { kind: 'refused', rule: 'validate: parsePair (no torn-rotation repair here)' };
  const [prevKey, prevCrt] = [read['ca-previous.key'] === 'read', read['ca-previous.crt'] === 'read'];
  if (prevKey !== prevCrt)
    return {
      kind: 'refused',
      rule: `validate: ErrHalfInitialised (a lone ${prevKey ? 'ca-previous.key' : 'ca-previous.crt'})`,
    };
  if (prevKey && !(await parsePair(at('ca-previous.crt'), at('ca-previous.key'))))
    return { kind: 'refused', rule: 'validate: the previous authority does not hold together' };
  if (read['authority-created'] !== 'read')
    return { kind: 'refused', rule: 'validate: the marker is missing beside a complete authority' };
  const fingerprint = fingerprintOf(readFileSync(at('ca.crt')));
  return { kind: 'whole', fingerprint };
}

function fingerprintOf(certPem: Uint8Array): string {
  const { createHash, X509Certificate } = process.getBuiltinModule('node:crypto');
  const der = pemDecode('CERTIFICATE', certPem);
  if (!der) return '';
  const spki = new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(spki).digest('base64').replace(/=+$/, '')}`;
}

/**
 * InstallAuthority (authority.go), ON DISK: creates ca/, then each file of the document in
 * AuthorityFiles order with O_EXCL, stopping at the first that exists. Returns the name it
 * stopped at, or undefined when it wrote everything. The harness runs it to produce what a
 * billet restart leaves (the chained crash).
 */
export function billetInstall(
  stateDir: string,
  files: Readonly<Record<string, Uint8Array>>,
): string | undefined {
  mkdirSync(path.join(stateDir, 'ca'), { recursive: true, mode: 0o700 });
  for (const name of AUTHORITY_FILES) {
    const body = files[name];
    if (!body || body.length === 0) continue;
    let fd;
    try {
      fd = openSync(
        pathOf(stateDir, name),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
        SECRET.has(name) ? 0o600 : 0o644,
      );
    } catch {
      return name;
    }
    writeSync(fd, body);
    closeSync(fd);
  }
  return undefined;
}

/**
 * What billet b2b42c1a's start does with `stateDir`: with `store`, Adopt first (which may
 * install, on disk, when `install` is set), then LoadServing; without, LoadServing alone.
 */
export async function wirecertReads(
  stateDir: string,
  deployment: string,
  options: { readonly store?: SeedStore; readonly install?: boolean } = {},
): Promise<WirecertReading> {
  const { store } = options;
  if (store) {
    const local = await readAuthority(stateDir);
    if (local.kind === 'refused') return { verdict: 'refuses', rule: `start: Adopt: ${local.rule}` };
    if (local.kind === 'whole' && local.fingerprint !== store.fingerprint)
      return { verdict: 'refuses', rule: 'start: Adopt: adoptOverExisting (another authority is published)' };
    if (local.kind === 'lost') {
      if (!options.install)
        return { verdict: 'refuses', rule: 'start: Adopt: InstallAuthority (not run here)' };
      const stopped = billetInstall(stateDir, store.files);
      if (stopped !== undefined)
        return { verdict: 'refuses', rule: `start: Adopt: InstallAuthority stops at ${stopped} (O_EXCL)` };
      const back = await readAuthority(stateDir);
      if (back.kind !== 'whole')
        return { verdict: 'refuses', rule: `start: Adopt: InstallAuthority's read-back` };
    }
  }
  return loadServing(stateDir, deployment);
}

/** LoadServing → readServing (rotation.go), with LoadOrCreateCA (wirecert.go) first. */
async function loadServing(stateDir: string, deployment: string): Promise<WirecertReading> {
  const ca = path.join(stateDir, 'ca');
  const at = (name: string) => path.join(ca, name);
  const crt = fileRead(at('ca.crt'), false);
  const key = fileRead(at('ca.key'), true);
  const marker = fileRead(path.join(stateDir, 'authority-created'), false) !== 'absent';
  const prevCrt = fileRead(at('ca-previous.crt'), false);
  const prevKey = fileRead(at('ca-previous.key'), true);

  // LoadOrCreateCA's switch, in its order.
  if (crt === 'read' && key === 'read') {
    if (!(await parseCA(at('ca.crt'), at('ca.key'), deployment))) {
      // repairPair: the torn rotation (new key beside the old certificate), exactly.
      const repaired = prevKey === 'read' && (await parseCA(at('ca.crt'), at('ca-previous.key'), deployment));
      if (!repaired)
        return { verdict: 'refuses', rule: 'LoadOrCreateCA: parseCA fails, repairPair does not apply' };
    }
  } else if (crt === 'absent' && key === 'absent') {
    return marker
      ? { verdict: 'refuses', rule: 'LoadOrCreateCA: ErrAuthorityLost' }
      : { verdict: 'mints', rule: 'LoadOrCreateCA: day one, createCA' };
  } else if (crt === 'error') {
    return { verdict: 'refuses', rule: 'LoadOrCreateCA: read ca.crt' };
  } else if (key === 'error') {
    return { verdict: 'refuses', rule: 'LoadOrCreateCA: read ca.key' };
  } else {
    return { verdict: 'refuses', rule: 'LoadOrCreateCA: ErrHalfInitialised' };
  }

  // readServing: the previous certificate, then (only when it is there) its key.
  if (prevCrt === 'error') return { verdict: 'refuses', rule: 'readServing: read the previous authority' };
  if (prevCrt === 'read') {
    if (prevKey === 'error')
      return { verdict: 'refuses', rule: "readServing: read the previous authority's key" };
    if (prevKey === 'read' && !(await parseCA(at('ca-previous.crt'), at('ca-previous.key'), deployment)))
      return { verdict: 'refuses', rule: 'readServing: parseCA of the previous pair' };
    return {
      verdict: 'starts',
      rule:
        prevKey === 'read'
          ? 'LoadServing: the overlap (presents the previous)'
          : 'LoadServing: a lone ca-previous.crt (presents the current, trusts both)',
    };
  }
  // stillMatches compares the PRESENCE of ca-previous.key with the snapshot, which counted it only
  // beside its certificate: a lone key never settles.
  if (prevKey !== 'absent')
    return {
      verdict: 'refuses',
      rule: 'LoadServing: a lone ca-previous.key never settles (stillMatches: "ca.crt changed underneath this read 3 times running")',
    };
  return { verdict: 'starts', rule: 'LoadServing: the current authority' };
}
