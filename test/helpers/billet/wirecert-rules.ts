/**
 * THE SEED'S BILLET, NOT A LATER ONE: an independent model of how billet at commit b2b42c1a
 * (junioryono/billet, the version with internal/wireshare) reads a state dir on start. Written
 * from that commit's source, function by function, never copied:
 *
 *   - internal/wirecert/wirecert.go `LoadOrCreateCA`: ca.crt is read before ca.key; a pair that
 *     does not parse goes to `repairPair`, which accepts it only when ca-previous.key pairs with
 *     ca.crt (the one torn read its Rotate can leave); both absent is day one without the marker
 *     and `ErrAuthorityLost` with it; one of the two is `ErrHalfInitialised`.
 *   - internal/wirecert/wirecert.go `readSecret` / `readPublic`: a symlink, a non-regular file,
 *     over 1 MiB (`maxPEM`), or a key with group/other bits is an error, not an absence.
 *   - internal/wirecert/wirecert.go `parseCA` → authority.go `parsePair`: PEM certificate, SEC1
 *     `EC PRIVATE KEY`, IsCA, self-signed, the key is the certificate's, O = the deployment.
 *   - internal/wirecert/authority.go `ReadAuthority` → `validate`: the PREVIOUS pair travels
 *     whole or not at all (a lone ca-previous.key OR a lone ca-previous.crt is
 *     `ErrHalfInitialised`), and a whole previous pair must hold together. wireshare's `Adopt`
 *     installs through authority.go `InstallAuthority`, which reads back through the same
 *     `ReadAuthority`.
 *   - the start path after LoadOrCreateCA (rotation.go `LoadServing` at b2b42c1a, whose source
 *     is not in the index this was written from): refuses a lone ca-previous.key — observed on
 *     that build as "ca.crt changed underneath this read 3 times running" — which is
 *     `validate`'s rule; it is modelled with `validate`'s previous-pair rule for both halves.
 *
 * A LATER billet ignores a lone ca-previous.key (test/helpers/crash-points.ts BILLET_TABLE);
 * this one does not start on it. The crash-point harness reads every state by both.
 */
import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { inspectPair } from '../../../src/pki/inspect-pair.js';
import { pemDecode } from '../../../src/pki/pem.js';

export type WirecertVerdict = 'starts' | 'mints' | 'refuses';

export interface WirecertReading {
  readonly verdict: WirecertVerdict;
  /** The function and rule that decided, as the harness prints it. */
  readonly rule: string;
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

/** parseCA → parsePair: SEC1 key only (x509.ParseECPrivateKey), and the pair rules baton's inspectPair checks. */
async function pairParses(certFile: string, keyFile: string, deployment: string): Promise<boolean> {
  const key = readFileSync(keyFile);
  if (!pemDecode('EC PRIVATE KEY', key)) return false;
  return (await inspectPair(key, readFileSync(certFile), deployment)).ok;
}

/** What billet b2b42c1a's control plane does on start with `stateDir`. */
export async function wirecertReads(stateDir: string, deployment: string): Promise<WirecertReading> {
  const ca = path.join(stateDir, 'ca');
  const at = (name: string) => path.join(ca, name);
  const crt = fileRead(at('ca.crt'), false);
  const key = fileRead(at('ca.key'), true);
  const marker = fileRead(path.join(stateDir, 'authority-created'), false) !== 'absent';
  const prevCrt = fileRead(at('ca-previous.crt'), false);
  const prevKey = fileRead(at('ca-previous.key'), true);

  // LoadOrCreateCA's switch, in its order.
  if (crt === 'read' && key === 'read') {
    if (!(await pairParses(at('ca.crt'), at('ca.key'), deployment))) {
      // repairPair: the torn rotation (new key beside the old certificate), exactly.
      const repaired =
        prevKey === 'read' && (await pairParses(at('ca.crt'), at('ca-previous.key'), deployment));
      if (!repaired)
        return { verdict: 'refuses', rule: 'LoadOrCreateCA: parseCA fails, repairPair does not apply' };
      return { verdict: 'starts', rule: 'LoadOrCreateCA: repairPair (the torn rotation)' };
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

  // The previous pair, by validate's rule (the start path and Adopt's read-back).
  if (prevCrt === 'error' || prevKey === 'error')
    return { verdict: 'refuses', rule: 'start: read the previous authority' };
  if (prevKey === 'read' && prevCrt === 'absent')
    return { verdict: 'refuses', rule: 'start: a lone ca-previous.key (validate: ErrHalfInitialised)' };
  if (prevCrt === 'read' && prevKey === 'absent')
    return { verdict: 'refuses', rule: 'start: a lone ca-previous.crt (validate: ErrHalfInitialised)' };
  if (prevCrt === 'read' && prevKey === 'read') {
    return (await pairParses(at('ca-previous.crt'), at('ca-previous.key'), deployment))
      ? { verdict: 'starts', rule: 'start: the overlap (both pairs)' }
      : { verdict: 'refuses', rule: 'start: the previous authority does not hold together' };
  }
  return { verdict: 'starts', rule: 'start: the current authority' };
}
