/**
 * The one factory that turns a store URL into a Store. The S3 adapter is imported only when
 * an s3:// URL asks for it, so `baton status --json` on a directory store does not load the SDK.
 */
import { DirectoryStore } from './directory-store.js';
import type { S3StoreOptions } from './s3-store.js';
import type { Store } from './store.js';
import { parseStoreUrl } from './store-url.js';

export async function openStore(url: string, options: S3StoreOptions = {}): Promise<Store> {
  const spec = parseStoreUrl(url);
  if (spec.kind === 'file') return new DirectoryStore(spec.dir);
  const { S3Store } = await import('./s3-store.js');
  return new S3Store(spec, options);
}
