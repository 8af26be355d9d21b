/**
 * An in-memory Store for rule tests, with REAL create-only / if-match semantics and
 * content-digest ETags, so a rule that would overwrite blind fails here exactly as it would
 * against S3. It never fails on its own: every failure a test sees was injected by that test
 * (`failNext`, `beforeNext`, or `enforcesPreconditions: false` to play an S3 emulator that
 * ignores preconditions).
 */
import type { BatonError } from '../../src/errors.js';
import { contentEtag } from '../../src/store/etag.js';
import { probeConditionalWrites } from '../../src/store/probe.js';
import { storeChangedError } from '../../src/store/store-changed.js';
import type { ConditionalWriteCheck, Precondition, Store, StoredDocument } from '../../src/store/store.js';

export const DOCUMENT_NAME = 'authority.json';

export type MemoryStoreOperation = 'get' | 'put' | 'check';

export interface MemoryStoreCall {
  readonly op: MemoryStoreOperation;
  readonly precondition?: Precondition;
}

export interface MemoryStoreOptions {
  readonly location?: string;
  /** False plays a store that ignores preconditions (like s3rver). Default true. */
  readonly enforcesPreconditions?: boolean;
  /** True plays a proxy that strips If-Match but passes If-None-Match. Default false. */
  readonly dropsIfMatch?: boolean;
  /** True plays a proxy that strips If-None-Match but passes If-Match. Default false. */
  readonly dropsIfNoneMatch?: boolean;
  /** A document already published when the test starts. */
  readonly document?: Uint8Array;
}

type Injection =
  | { readonly kind: 'fail'; readonly error: BatonError }
  | { readonly kind: 'hook'; readonly run: (store: MemoryStore) => void | Promise<void> };

export class MemoryStore implements Store {
  readonly location: string;
  readonly enforcesPreconditions: boolean;
  readonly dropsIfMatch: boolean;
  readonly dropsIfNoneMatch: boolean;
  /** Every get/put/check a caller made, in order (seeding through `setDocument` is not one). */
  readonly calls: MemoryStoreCall[] = [];
  readonly #objects = new Map<string, StoredDocument>();
  readonly #injections = new Map<MemoryStoreOperation, Injection[]>();

  constructor(options: MemoryStoreOptions = {}) {
    this.location = options.location ?? `memory://test/${DOCUMENT_NAME}`;
    this.enforcesPreconditions = options.enforcesPreconditions ?? true;
    this.dropsIfMatch = options.dropsIfMatch ?? false;
    this.dropsIfNoneMatch = options.dropsIfNoneMatch ?? false;
    if (options.document) this.setDocument(options.document);
  }

  /** The published document as stored now (a copy), or undefined. */
  get document(): StoredDocument | undefined {
    return copy(this.#objects.get(DOCUMENT_NAME));
  }

  /** name → ETag of every object: take one before and one after to assert "nothing changed". */
  snapshot(): Record<string, string> {
    return Object.fromEntries([...this.#objects].map(([name, object]) => [name, object.etag]));
  }

  /** Every object with its bytes (copies). */
  objects(): Record<string, StoredDocument> {
    return Object.fromEntries([...this.#objects].map(([name, object]) => [name, copy(object)!]));
  }

  /** Publishes directly, as another controller would, bypassing preconditions and the call log. */
  setDocument(body: Uint8Array): string {
    return this.#write(DOCUMENT_NAME, body);
  }

  deleteDocument(): void {
    this.#objects.delete(DOCUMENT_NAME);
  }

  /** The next `op` throws `error` and changes nothing. */
  failNext(op: MemoryStoreOperation, error: BatonError): this {
    this.#queue(op, { kind: 'fail', error });
    return this;
  }

  /** Runs `hook` once just before the next `op` — e.g. another controller publishes in between. */
  beforeNext(op: MemoryStoreOperation, hook: (store: MemoryStore) => void | Promise<void>): this {
    this.#queue(op, { kind: 'hook', run: hook });
    return this;
  }

  async get(): Promise<StoredDocument | undefined> {
    this.calls.push({ op: 'get' });
    await this.#inject('get');
    return this.document;
  }

  async put(body: Uint8Array, precondition?: Precondition): Promise<{ readonly etag: string }> {
    this.calls.push(precondition ? { op: 'put', precondition } : { op: 'put' });
    await this.#inject('put');
    this.#check(DOCUMENT_NAME, precondition);
    return { etag: this.#write(DOCUMENT_NAME, body) };
  }

  async checkConditionalWrites(): Promise<ConditionalWriteCheck> {
    this.calls.push({ op: 'check' });
    await this.#inject('check');
    return probeConditionalWrites({
      location: this.location,
      write: async (name, body, precondition) => {
        this.#check(name, precondition);
        return { etag: this.#write(name, body) };
      },
      remove: async (name) => {
        this.#objects.delete(name);
      },
    });
  }

  #check(name: string, precondition: Precondition | undefined): void {
    if (!precondition || !this.enforcesPreconditions) return;
    if (precondition.kind === 'if-match' && this.dropsIfMatch) return;
    if (precondition.kind === 'create-only' && this.dropsIfNoneMatch) return;
    const existing = this.#objects.get(name);
    if (precondition.kind === 'create-only' && existing) {
      throw storeChangedError(this.location, 'published-meanwhile');
    }
    if (precondition.kind === 'if-match' && existing?.etag !== precondition.etag) {
      throw storeChangedError(this.location, existing ? 'replaced' : 'removed');
    }
  }

  #write(name: string, body: Uint8Array): string {
    const etag = contentEtag(body);
    this.#objects.set(name, { body: body.slice(), etag });
    return etag;
  }

  #queue(op: MemoryStoreOperation, injection: Injection): void {
    const list = this.#injections.get(op) ?? [];
    list.push(injection);
    this.#injections.set(op, list);
  }

  async #inject(op: MemoryStoreOperation): Promise<void> {
    const next = this.#injections.get(op)?.shift();
    if (!next) return;
    if (next.kind === 'fail') throw next.error;
    await next.run(this);
  }
}

function copy(object: StoredDocument | undefined): StoredDocument | undefined {
  return object ? { body: object.body.slice(), etag: object.etag } : undefined;
}
