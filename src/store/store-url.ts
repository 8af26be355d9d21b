/**
 * A store is chosen by URL (docs/publishing.md). Parsing is strict — an unknown scheme, an unknown
 * query parameter or a relative path is a usage error naming the URL — because a typo here
 * points a controller at an empty store, where it would mint a second authority.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';

export const DOCUMENT_FILE = 'authority.json';

export interface S3StoreSpec {
  readonly kind: 's3';
  readonly bucket: string;
  /** '' or a prefix without leading/trailing slashes. */
  readonly prefix: string;
  /** The object key of the document: `<prefix>/authority.json`. */
  readonly key: string;
  readonly region: string | undefined;
  readonly endpoint: string | undefined;
  readonly pathStyle: boolean;
  readonly sse: 'aws:kms' | 'AES256' | undefined;
  readonly kmsKeyId: string | undefined;
}

export interface DirectoryStoreSpec {
  readonly kind: 'file';
  /** Absolute directory; the document is `<dir>/authority.json`. */
  readonly dir: string;
}

/**
 * billet's identity store: AWS SSM Parameter Store. The document is the SecureString
 * `<prefix>/node-wire-authority`, the name billet's `ssmAuthorityStore` reads and writes.
 */
export interface SsmStoreSpec {
  readonly kind: 'ssm';
  /** '' or `/a/b`: a leading slash, no trailing one (billet's identity.aws_ssm.prefix, normalised). */
  readonly prefix: string;
  /** The parameter name: `<prefix>/node-wire-authority`. */
  readonly name: string;
  readonly region: string | undefined;
  readonly endpoint: string | undefined;
  /** The KMS key the SecureString is encrypted under; undefined: the account's alias/aws/ssm. */
  readonly kmsKeyId: string | undefined;
}

export type StoreSpec = S3StoreSpec | DirectoryStoreSpec | SsmStoreSpec;

/** The leaf billet keeps its published authority under (internal/wiring: authorityParameter). */
export const SSM_PARAMETER_LEAF = 'node-wire-authority';

const S3_PARAMS = new Set(['region', 'endpoint', 'path_style', 'sse', 'kms_key_id']);
const SSM_PARAMS = new Set(['region', 'endpoint', 'kms_key_id']);
/** A Parameter Store path segment: letters, digits and . - _ (AWS's rule for hierarchy names). */
const SSM_SEGMENT = /^[A-Za-z0-9._-]+$/;
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const EXAMPLES =
  'Use s3://bucket/prefix[?region=&endpoint=&path_style=true&sse=aws:kms&kms_key_id=], ssm:///prefix[?region=&endpoint=&kms_key_id=] or file:///absolute/dir.';

export function parseStoreUrl(url: string): StoreSpec {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(url, 'is not a URL');
  }
  if (parsed.protocol === 'file:') return parseFileUrl(url, parsed);
  if (parsed.protocol === 's3:') return parseS3Url(url, parsed);
  if (parsed.protocol === 'ssm:') return parseSsmUrl(url, parsed);
  throw usage(url, `has the scheme "${parsed.protocol.replace(/:$/, '')}", which baton does not know`);
}

function parseFileUrl(url: string, parsed: URL): DirectoryStoreSpec {
  if (parsed.host !== '' && parsed.host !== 'localhost')
    throw usage(url, `names the host "${parsed.host}"; a directory store is local`);
  if (parsed.search || parsed.hash)
    throw usage(url, 'has a query or fragment, which a directory store does not take');
  if (!url.startsWith('file:///') && !url.startsWith('file://localhost/'))
    throw usage(url, 'is not an absolute path');
  const dir = path.normalize(decodeOrRefuse(url, parsed.pathname));
  if (!path.isAbsolute(dir) || dir === '/') throw usage(url, 'does not name a directory below /');
  return { kind: 'file', dir: dir.replace(/\/+$/, '') };
}

function parseS3Url(url: string, parsed: URL): S3StoreSpec {
  const bucket = parsed.hostname;
  if (!BUCKET.test(bucket))
    throw usage(url, `has the bucket name "${bucket}", which is not a valid S3 bucket name`);
  if (parsed.port || parsed.username || parsed.password || parsed.hash)
    throw usage(url, 'has a port, user or fragment; put an endpoint in ?endpoint=');
  // The raw path, not parsed.pathname: the URL parser resolves "a/../b" to "b" silently.
  const rawPath =
    url
      .slice(url.indexOf('//') + 2)
      .replace(/^[^/?#]*/, '')
      .split(/[?#]/)[0] ?? '';
  const prefix = decodeOrRefuse(url, rawPath).replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((part) => part === '.' || part === '..' || (prefix !== '' && part === ''))) {
    throw usage(url, 'has an empty, "." or ".." segment in its prefix');
  }
  for (const name of parsed.searchParams.keys()) {
    if (!S3_PARAMS.has(name))
      throw usage(url, `has the unknown parameter "${name}" (known: ${[...S3_PARAMS].join(', ')})`);
  }
  const q = (name: string) => {
    const all = parsed.searchParams.getAll(name);
    if (all.length > 1) throw usage(url, `gives "${name}" more than once`);
    return all[0] === undefined || all[0] === '' ? undefined : all[0];
  };
  const pathStyle = q('path_style');
  if (pathStyle !== undefined && pathStyle !== 'true' && pathStyle !== 'false')
    throw usage(url, 'has path_style that is neither true nor false');
  const sse = q('sse');
  if (sse !== undefined && sse !== 'aws:kms' && sse !== 'AES256')
    throw usage(url, 'has sse that is neither aws:kms nor AES256');
  const kmsKeyId = q('kms_key_id');
  if (kmsKeyId !== undefined && sse !== 'aws:kms') throw usage(url, 'gives kms_key_id without sse=aws:kms');
  const endpoint = checkedEndpoint(url, q('endpoint'));
  return {
    kind: 's3',
    bucket,
    prefix,
    key: prefix ? `${prefix}/${DOCUMENT_FILE}` : DOCUMENT_FILE,
    region: q('region'),
    endpoint,
    pathStyle: pathStyle === 'true',
    sse: sse,
    kmsKeyId,
  };
}

/**
 * `ssm:///billet/prod` → the parameter `/billet/prod/node-wire-authority`. No host: Parameter
 * Store is per account and region, which the SDK chain (or ?region=) names. The path is read
 * raw, as for S3, so "a/../b" is refused rather than resolved to another deployment's prefix.
 */
function parseSsmUrl(url: string, parsed: URL): SsmStoreSpec {
  if (!url.startsWith('ssm:///'))
    throw usage(url, 'names a host; an SSM store is ssm:///<prefix> (three slashes), the region in ?region=');
  if (parsed.hash) throw usage(url, 'has a fragment');
  const rawPath = url.slice('ssm://'.length).split(/[?#]/)[0] ?? '';
  const prefix = decodeOrRefuse(url, rawPath).replace(/^\/+|\/+$/g, '');
  if (
    prefix !== '' &&
    !prefix.split('/').every((part) => SSM_SEGMENT.test(part) && part !== '.' && part !== '..')
  )
    throw usage(
      url,
      'has a prefix segment that is empty, "." or "..", or holds a character Parameter Store does not allow (letters, digits, . - _ only)',
    );
  if (/^(aws|ssm)/i.test(prefix))
    throw usage(url, 'has a prefix that begins with "aws" or "ssm", which Parameter Store reserves');
  for (const key of parsed.searchParams.keys()) {
    if (!SSM_PARAMS.has(key))
      throw usage(url, `has the unknown parameter "${key}" (known for ssm: ${[...SSM_PARAMS].join(', ')})`);
  }
  const q = (key: string) => {
    const all = parsed.searchParams.getAll(key);
    if (all.length > 1) throw usage(url, `gives "${key}" more than once`);
    return all[0] === undefined || all[0] === '' ? undefined : all[0];
  };
  const normalised = prefix === '' ? '' : `/${prefix}`;
  return {
    kind: 'ssm',
    prefix: normalised,
    name: `${normalised}/${SSM_PARAMETER_LEAF}`,
    region: q('region'),
    endpoint: checkedEndpoint(url, q('endpoint')),
    kmsKeyId: q('kms_key_id'),
  };
}

/**
 * What seals the document at rest when the store itself does, in words for status: on SSM a
 * SecureString under KMS (baton's own seal is refused there). Undefined for S3 and a directory,
 * where only baton's seal_key_file seals it. Never throws: status must show a bad URL elsewhere.
 */
export function storeAtRestSeal(url: string): string | undefined {
  let spec: StoreSpec;
  try {
    spec = parseStoreUrl(url);
  } catch {
    return undefined;
  }
  return spec.kind === 'ssm' ? kmsSealWords(spec.kmsKeyId) : undefined;
}

export function kmsSealWords(kmsKeyId: string | undefined): string {
  return `KMS: a SecureString under ${kmsKeyId ? `the key ${kmsKeyId}` : "alias/aws/ssm (the account's default key)"}`;
}

function checkedEndpoint(url: string, endpoint: string | undefined): string | undefined {
  if (endpoint === undefined) return undefined;
  try {
    const e = new URL(endpoint);
    if (e.protocol !== 'http:' && e.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw usage(url, `has the endpoint "${endpoint}", which is not an http(s) URL`);
  }
  return endpoint;
}

function decodeOrRefuse(url: string, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw usage(url, 'has a malformed %-escape in its path');
  }
}

function usage(url: string, why: string): BatonError {
  return new BatonError('usage', {
    what: `The store URL ${why}.`,
    where: url,
    next: EXAMPLES,
    changed: 'Nothing was read or written.',
  });
}
