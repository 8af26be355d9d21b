/**
 * Authorities made the way billet's wirecert makes them, by openssl (a tool baton did not
 * write): a SEC1 "EC PRIVATE KEY" (`openssl ecparam -genkey -noout`, what Go's
 * x509.MarshalECPrivateKey writes) and a self-signed CA certificate with O = deployment,
 * CN "billet node wire CA", critical basicConstraints pathlen 0 and keyUsage
 * certSign/cRLSign/digitalSignature — plus, for a rotated one, the OU claim. Made at run time,
 * never pasted: a pasted certificate expires and hides which field a test depends on.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';

/** Throws, saying what to install, when openssl is missing: these suites never skip (CI=true or not). */
export function requireOpenssl(): void {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
  } catch {
    throw new Error(
      `openssl is not on PATH${process.env.CI ? ' (CI=true: this suite must run, not skip)' : ''}: install it (apt-get install openssl); the billet fixtures are made by it.`,
    );
  }
}

export function openssl(args: readonly string[], input?: string | Uint8Array): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

export interface BilletPair {
  readonly keyPem: Uint8Array;
  readonly certPem: Uint8Array;
  /** Computed by openssl, never by baton: SHA256 over the DER SubjectPublicKeyInfo, unpadded base64. */
  readonly fingerprint: Fingerprint;
}

let counter = 0;

/**
 * One billet-style authority in `work`. `ou` is written verbatim as the OU (e.g.
 * `billet-replaces:SHA256:…`); several OUs give several attributes.
 */
export function billetPair(
  work: string,
  deployment: string,
  options: { readonly ou?: readonly string[] } = {},
): BilletPair {
  mkdirSync(work, { recursive: true });
  const name = `billet-${process.pid}-${counter++}`;
  const keyFile = path.join(work, `${name}.key`);
  const certFile = path.join(work, `${name}.crt`);
  const conf = path.join(work, `${name}.cnf`);
  writeFileSync(keyFile, openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout']), { mode: 0o600 });
  // A config file rather than -subj: a fingerprint holds "/" and "+", which -subj would split.
  const ous = (options.ou ?? []).map((value, i) => `${i}.OU = ${value}`);
  writeFileSync(
    conf,
    [
      '[req]',
      'distinguished_name = dn',
      'x509_extensions = ext',
      'prompt = no',
      'string_mask = utf8only',
      '[dn]',
      'CN = billet node wire CA',
      `O = ${deployment}`,
      ...ous,
      '[ext]',
      'basicConstraints = critical,CA:TRUE,pathlen:0',
      'keyUsage = critical,keyCertSign,cRLSign,digitalSignature',
      '',
    ].join('\n'),
  );
  execFileSync(
    'openssl',
    ['req', '-x509', '-new', '-key', keyFile, '-config', conf, '-days', '3650', '-sha256', '-out', certFile],
    { stdio: 'pipe' },
  );
  const digest = execFileSync(
    '/bin/sh',
    [
      '-c',
      `openssl x509 -in '${certFile}' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64`,
    ],
    { encoding: 'utf8' },
  );
  return {
    keyPem: new Uint8Array(readFileSync(keyFile)),
    certPem: new Uint8Array(readFileSync(certFile)),
    fingerprint: `SHA256:${digest.trim().replace(/=+$/, '')}` as Fingerprint,
  };
}

/**
 * A state dir laid out as billet's wirecert leaves it: ca/ 0700, ca.key 0600, ca.crt 0644,
 * the marker `<deployment>\n` beside ca/, and the previous pair during an overlap.
 */
export function writeBilletState(
  stateDir: string,
  deployment: string,
  current: BilletPair,
  previous?: BilletPair,
): void {
  const caDir = path.join(stateDir, 'ca');
  mkdirSync(caDir, { recursive: true, mode: 0o700 });
  chmodSync(stateDir, 0o700);
  const put = (name: string, bytes: Uint8Array, mode: number) => {
    writeFileSync(path.join(caDir, name), bytes, { mode });
    chmodSync(path.join(caDir, name), mode);
  };
  if (previous) {
    put('ca-previous.crt', previous.certPem, 0o644);
    put('ca-previous.key', previous.keyPem, 0o600);
  }
  put('ca.key', current.keyPem, 0o600);
  put('ca.crt', current.certPem, 0o644);
  writeFileSync(path.join(stateDir, 'authority-created'), `${deployment}\n`, { mode: 0o644 });
}

/** A whole authority as billet's wirecert.AuthorityFiles names it: name → bytes. */
export type BilletFiles = Readonly<Record<string, Uint8Array>>;

/** billet's files for `current` (and `previous` during an overlap), with the marker `<deployment>\n`. */
export function billetFiles(deployment: string, current: BilletPair, previous?: BilletPair): BilletFiles {
  return {
    'authority-created': new TextEncoder().encode(`${deployment}\n`),
    'ca.crt': current.certPem,
    'ca.key': current.keyPem,
    ...(previous ? { 'ca-previous.crt': previous.certPem, 'ca-previous.key': previous.keyPem } : {}),
  };
}

/**
 * A document byte for byte as billet's wireshare.Publish writes it (b2b42c1a): Go's
 * json.Marshal of its `document` struct — the fields in declaration order (deployment,
 * fingerprint, published_at, files), no whitespace, no trailing newline, the `files` map's keys
 * sorted bytewise (Go sorts map keys), each value base64.StdEncoding, published_at RFC 3339 in
 * whole seconds. No `format`, no previous_fingerprint, no published_by.
 */
export function billetDocument(
  deployment: string,
  fingerprint: string,
  files: BilletFiles,
  publishedAt = '2026-12-01T09:30:00Z',
): Uint8Array {
  const names = Object.keys(files).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const encoded = names
    .map((name) => `${JSON.stringify(name)}:${JSON.stringify(Buffer.from(files[name]!).toString('base64'))}`)
    .join(',');
  return new TextEncoder().encode(
    `{"deployment":${JSON.stringify(deployment)},"fingerprint":${JSON.stringify(fingerprint)},"published_at":${JSON.stringify(publishedAt)},"files":{${encoded}}}`,
  );
}
