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

export type StoreSpec = S3StoreSpec | DirectoryStoreSpec;

const S3_PARAMS = new Set(['region', 'endpoint', 'path_style', 'sse', 'kms_key_id']);
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const EXAMPLES =
  'Use s3://bucket/prefix[?region=&endpoint=&path_style=true&sse=aws:kms&kms_key_id=] or file:///absolute/dir.';

export function parseStoreUrl(url: string): StoreSpec {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(url, 'is not a URL');
  }
  if (parsed.protocol === 'file:') return parseFileUrl(url, parsed);
  if (parsed.protocol === 's3:') return parseS3Url(url, parsed);
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
  const endpoint = q('endpoint');
  if (endpoint !== undefined) {
    try {
      const e = new URL(endpoint);
      if (e.protocol !== 'http:' && e.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw usage(url, `has the endpoint "${endpoint}", which is not an http(s) URL`);
    }
  }
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
