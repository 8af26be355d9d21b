import path from 'node:path';

/**
 * Where each file of an authority lives in a state dir (docs/authority-on-disk.md). The marker sits OUTSIDE
 * ca/ so that losing ca/ (a backup that skipped it, a script that recreated it) leaves the
 * evidence that this host once held the authority.
 */
export interface AuthorityLayout {
  readonly stateDir: string;
  readonly caDir: string;
  readonly lock: string;
  readonly marker: string;
  readonly cert: string;
  readonly key: string;
  readonly previousCert: string;
  readonly previousKey: string;
  readonly newCert: string;
  readonly newKey: string;
}

export const CA_DIR = 'ca';
export const LOCK_FILE = 'ca.lock';
export const MARKER_FILE = 'authority-created';
export const NEW_CERT = 'ca.crt.new';
export const NEW_KEY = 'ca.key.new';
/** The names a rotation may leave in ca/ besides the four authority files. */
export const ROTATION_FILES = [NEW_CERT, NEW_KEY] as const;

export function layoutOf(stateDir: string): AuthorityLayout {
  const caDir = path.join(stateDir, CA_DIR);
  return {
    stateDir,
    caDir,
    lock: path.join(stateDir, LOCK_FILE),
    marker: path.join(stateDir, MARKER_FILE),
    cert: path.join(caDir, 'ca.crt'),
    key: path.join(caDir, 'ca.key'),
    previousCert: path.join(caDir, 'ca-previous.crt'),
    previousKey: path.join(caDir, 'ca-previous.key'),
    newCert: path.join(caDir, NEW_CERT),
    newKey: path.join(caDir, NEW_KEY),
  };
}

export const KEY_MODE = 0o600;
export const CERT_MODE = 0o644;
export const MARKER_MODE = 0o644;
export const DIR_MODE = 0o700;
/** No authority file is anywhere near this; a bigger one is not ours and is not read whole. */
export const MAX_FILE_BYTES = 1024 * 1024;
