/**
 * The one factory that turns a store URL into a Store. The S3 and SSM adapters are imported
 * only when an s3:// or ssm:// URL asks for them, so `baton status --json` on a directory
 * store does not load an SDK.
 */
import { DirectoryStore } from './directory-store.js';
import type { S3StoreOptions } from './s3-store.js';
import type { Store } from './store.js';
import { parseStoreUrl } from './store-url.js';

export async function openStore(url: string, options: S3StoreOptions = {}): Promise<Store> {
  const spec = parseStoreUrl(url);
  if (spec.kind === 'file') return new DirectoryStore(spec.dir);
  if (spec.kind === 'ssm') {
    const { SsmStore } = await import('./ssm-store.js');
    return new SsmStore(spec, options);
  }
  const { S3Store } = await import('./s3-store.js');
  return new S3Store(spec, options);
}
