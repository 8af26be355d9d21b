/**
 * The S3 adapter (docs/publishing.md). Loaded lazily by `openStore` — the SDK costs ~110 ms to
 * import and commands that never touch S3 must not pay it.
 *
 * Conditional writes are S3's own: a first publish is `If-None-Match: *`, a replace is
 * `If-Match: <ETag read for this decision>`; 412/409 (and a 404 on If-Match) become
 * 'store-changed', so a controller re-reads instead of overwriting what another just published.
 * Errors are classified by HTTP status first and error name second, because S3-compatible
 * stores disagree on names but not on statuses.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { BatonError, type StoreFailureReason } from '../errors.js';
import { shown } from '../outside-text.js';
import { MAX_DOCUMENT_BYTES, oversizeError } from './body-limit.js';
import {
  BodyOverLimit,
  BodyStalled,
  CallDeadline,
  callBounds,
  readBodyWithin,
  secondsWords,
  type CallBounds,
} from './call-deadline.js';
import { offlineRoute } from './offline-route-steps.js';
import { probeConditionalWrites } from './probe.js';
import { storeChangedError } from './store-changed.js';
import {
  NEIGHBOUR_LIMIT,
  NEIGHBOUR_MAX_BYTES,
  type ClockReading,
  type ConditionalWriteCheck,
  type DocumentVersion,
  type DocumentVersions,
  type NeighbourDocument,
  type Precondition,
  type Store,
  type StoredDocument,
} from './store.js';
import type { S3StoreSpec } from './store-url.js';

/** Static keys, as an emulator (the drill's s3rver, moto in the tests) is reached with. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface S3StoreOptions {
  /**
   * Whoever composes the store says where its keys come from; absent means the SDK's standard
   * chain (AWS_PROFILE, instance role…), which is what the CLI uses. Never looked up from
   * process-wide state, so a drill's emulator keys cannot reach a real endpoint, nor a real
   * profile the drill's emulator.
   */
  readonly credentials?: S3Credentials;
  /** Bounded so a black-holed endpoint fails in seconds, not minutes. */
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  readonly maxAttempts?: number;
}

type Operation = 'read' | 'write' | 'delete';

/** Each request's bounds, and the total it can never exceed: the one formula of every store (call-deadline.ts). */
export type S3Bounds = CallBounds;

export function s3Bounds(options: S3StoreOptions = {}): S3Bounds {
  return callBounds(options);
}

/** The bounds in words: "3 attempts of at most 3 s to connect and 5 s to answer, 25 s in all". */
export function boundsWords(bounds: S3Bounds): string {
  const s = (ms: number) => `${Math.round(ms / 100) / 10} s`;
  return `${bounds.attempts} attempt(s) of at most ${s(bounds.connectMs)} to connect and ${s(bounds.requestMs)} to answer, ${s(bounds.totalMs)} in all`;
}

export class S3Store implements Store {
  readonly location: string;
  readonly #client: S3Client;
  readonly #maxAttempts: number;
  /** The timeouts every request runs under (docs/publishing.md "Timeouts"). */
  readonly bounds: S3Bounds;
  #regionChecked: Promise<void> | undefined;
  #clock: ClockReading | undefined;

  constructor(
    readonly spec: S3StoreSpec,
    options: S3StoreOptions = {},
  ) {
    this.location = `s3://${spec.bucket}/${spec.key}`;
    this.bounds = s3Bounds(options);
    this.#maxAttempts = this.bounds.attempts;
    // The SDK warns about Node 20 on stderr, which would tear a full-screen view.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const config: S3ClientConfig = {
      // Without these the SDK sends aws-chunked framing that some S3-compatible stores save
      // as the object itself (docs/testing.md).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: this.#maxAttempts,
      retryMode: 'standard',
      requestHandler: {
        connectionTimeout: this.bounds.connectMs,
        requestTimeout: this.bounds.requestMs,
        throwOnRequestTimeout: true,
      },
      ...(spec.region ? { region: spec.region } : {}),
      ...(spec.endpoint ? { endpoint: spec.endpoint } : {}),
      ...(spec.pathStyle ? { forcePathStyle: true } : {}),
    };
    if (options.credentials) config.credentials = { ...options.credentials };
    this.#client = new S3Client(config);
    // Inside the deserializer, so every answer (a 404 or a 412 too) is seen with its headers:
    // the store's Date is the clock a mint is checked against.
    this.#client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        this.#noteDate((out.response as { headers?: Record<string, string | undefined> }).headers);
        return out;
      },
      { step: 'deserialize', name: 'batonStoreDate', priority: 'low' },
    );
  }

  async get(): Promise<StoredDocument | undefined> {
    return this.#get(this.spec.key);
  }

  lastClockReading(): ClockReading | undefined {
    return this.#clock;
  }

  #noteDate(headers: Record<string, string | undefined> | undefined): void {
    const date = headers?.date ?? headers?.Date;
    const at = date ? new Date(date) : undefined;
    if (at && !Number.isNaN(at.getTime())) this.#clock = { store: at, local: new Date() };
  }

  async put(body: Uint8Array, precondition?: Precondition): Promise<{ readonly etag: string }> {
    return this.#put(this.spec.key, body, precondition);
  }

  async checkConditionalWrites(): Promise<ConditionalWriteCheck> {
    const keyOf = (name: string) => (this.spec.prefix ? `${this.spec.prefix}/${name}` : name);
    return probeConditionalWrites({
      location: `s3://${this.spec.bucket}/${this.spec.prefix}`,
      write: (name, body, precondition) => this.#put(keyOf(name), body, precondition),
      remove: (name) => this.#removeEveryVersion(keyOf(name)),
      readEtag: async (name) => (await this.#get(keyOf(name)))?.etag,
    });
  }

  async documentVersions(): Promise<DocumentVersions> {
    const key = this.spec.key;
    const found: { versionId: string; lastModified: Date | undefined; isLatest: boolean }[] = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    try {
      for (let page = 0; page < 100; page++) {
        const listed = await this.#send((abortSignal) =>
          this.#client.send(
            new ListObjectVersionsCommand({
              Bucket: this.spec.bucket,
              Prefix: key,
              KeyMarker: keyMarker,
              VersionIdMarker: versionMarker,
            }),
            { abortSignal },
          ),
        );
        for (const v of listed.Versions ?? []) {
          if (v.Key === key && v.VersionId)
            found.push({
              versionId: v.VersionId,
              lastModified: v.LastModified,
              isLatest: v.IsLatest === true,
            });
        }
        if (!listed.IsTruncated) break;
        keyMarker = listed.NextKeyMarker;
        versionMarker = listed.NextVersionIdMarker;
      }
    } catch (error) {
      const failure = classifyS3Error(error, this.#where(key), 'read', this.spec, this.bounds);
      return { listed: false, why: failure.what };
    }
    const versions: DocumentVersion[] = [];
    for (const v of found) {
      let body: Uint8Array | undefined;
      // Each version's read (headers and body) is one call under its own deadline: a version
      // that stalls is read as unreadable, never waited on for ever.
      const deadline = new CallDeadline(this.bounds.totalMs);
      try {
        const response = await this.#send(
          (abortSignal) =>
            this.#client.send(
              new GetObjectCommand({ Bucket: this.spec.bucket, Key: key, VersionId: v.versionId }),
              { abortSignal },
            ),
          deadline,
        );
        if (response.ContentLength === undefined || response.ContentLength <= MAX_DOCUMENT_BYTES) {
          body = await readBodyWithin(
            bodyStreamOf(response.Body),
            deadline,
            MAX_DOCUMENT_BYTES,
            response.ContentLength,
          );
        } else {
          bodyStreamOf(response.Body)?.destroy?.();
        }
      } catch {
        body = undefined;
      } finally {
        deadline.end();
      }
      versions.push({ ...v, body });
    }
    return { listed: true, versions };
  }

  /**
   * Deletes `key` and, on a versioned bucket, every version and delete marker of it: a plain
   * delete there only adds a marker, and the probe's versions would stay in the bucket for good.
   */
  async #removeEveryVersion(key: string): Promise<void> {
    const where = this.#where(key);
    let versions: { VersionId?: string | undefined; Key?: string | undefined }[] | undefined;
    try {
      const listed = await this.#send((abortSignal) =>
        this.#client.send(new ListObjectVersionsCommand({ Bucket: this.spec.bucket, Prefix: key }), {
          abortSignal,
        }),
      );
      versions = [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])].filter(
        (v) => v.Key === key && v.VersionId,
      );
    } catch {
      // A store without the versions API (some emulators) keeps no versions: a plain delete is whole.
      versions = undefined;
    }
    try {
      for (const version of versions ?? []) {
        await this.#send((abortSignal) =>
          this.#client.send(
            new DeleteObjectCommand({ Bucket: this.spec.bucket, Key: key, VersionId: version.VersionId! }),
            { abortSignal },
          ),
        );
      }
      // Unversioned buckets list their object with VersionId "null" (deleted above) or not at
      // all; a plain delete then is harmless, and whole where nothing was listed.
      if (!versions || versions.length === 0)
        await this.#send((abortSignal) =>
          this.#client.send(new DeleteObjectCommand({ Bucket: this.spec.bucket, Key: key }), { abortSignal }),
        );
    } catch (error) {
      throw classifyS3Error(error, where, 'delete', this.spec, this.bounds);
    }
  }

  /**
   * Every request goes through here: the region is resolved first, once, so a missing region
   * is known by where it failed rather than by the SDK's words for it.
   */
  async #send<T>(request: (abortSignal: AbortSignal) => Promise<T>, callDeadline?: CallDeadline): Promise<T> {
    this.#regionChecked ??= this.#client.config.region().then(
      () => undefined,
      (error: unknown) => {
        throw new RegionMissing(error);
      },
    );
    await this.#regionChecked;
    // THE TOTAL BOUND: the SDK's timeouts are per attempt (and its request timeout is an idle
    // timer), so a store that trickles could hold a failover for minutes; this one cannot.
    // A call that reads a body after this (a GET) passes its own deadline, so the body is read
    // under the same bound as the headers.
    const deadline = callDeadline ?? new CallDeadline(this.bounds.totalMs);
    // Raced against the deadline as well as handed to the SDK: an SDK that misses the abort
    // (a body it collects itself, a socket it no longer watches) cannot outlast the bound.
    let onAbort: (() => void) | undefined;
    const reached = new Promise<never>((_, reject) => {
      onAbort = () => reject(new TotalBoundReached(undefined, deadline.waitedMs()));
      if (deadline.reached) onAbort();
      else deadline.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([request(deadline.signal), reached]);
    } catch (error) {
      if (deadline.reached)
        throw error instanceof TotalBoundReached ? error : new TotalBoundReached(error, deadline.waitedMs());
      throw error;
    } finally {
      if (onAbort) deadline.signal.removeEventListener('abort', onAbort);
      reached.catch(() => undefined);
      if (!callDeadline) deadline.end();
    }
  }

  /** One page of ListObjectsV2 under the parent prefix; any failure (no s3:ListBucket) is []. */
  async neighbours(): Promise<readonly NeighbourDocument[]> {
    const name = this.spec.key.slice(this.spec.key.lastIndexOf('/') + 1);
    const cut = this.spec.prefix.lastIndexOf('/');
    const parent = cut < 0 ? '' : this.spec.prefix.slice(0, cut + 1);
    try {
      const listed = await this.#send((abortSignal) =>
        this.#client.send(
          new ListObjectsV2Command({ Bucket: this.spec.bucket, Prefix: parent, MaxKeys: 1000 }),
          { abortSignal },
        ),
      );
      const keys = (listed.Contents ?? [])
        .filter(
          (o) =>
            o.Key !== undefined &&
            o.Key !== this.spec.key &&
            (o.Key === name || o.Key.endsWith(`/${name}`)) &&
            (o.Size ?? 0) <= NEIGHBOUR_MAX_BYTES,
        )
        .map((o) => o.Key!)
        .slice(0, NEIGHBOUR_LIMIT);
      const found: NeighbourDocument[] = [];
      for (const key of keys) {
        const got = await this.#get(key).catch(() => undefined);
        if (got) found.push({ location: `s3://${this.spec.bucket}/${key}`, body: got.body });
      }
      return found;
    } catch {
      return [];
    }
  }

  /** Ends the client's sockets (tests and the drill; the CLI simply exits). */
  destroy(): void {
    this.#client.destroy();
  }

  async #get(key: string): Promise<StoredDocument | undefined> {
    // ONE DEADLINE for the whole read: every attempt, its headers and its body.
    const deadline = new CallDeadline(this.bounds.totalMs);
    try {
      return await this.#getWithin(key, deadline);
    } finally {
      deadline.end();
    }
  }

  async #getWithin(key: string, deadline: CallDeadline): Promise<StoredDocument | undefined> {
    // The SDK retries a request that failed before its headers arrived; a body cut short
    // after them is retried here, within the same bound, rather than read as a bad document.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#getOnce(key, deadline);
      } catch (error) {
        if (!(error instanceof ShortBody) || attempt >= this.#maxAttempts) {
          if (!(error instanceof ShortBody)) throw error;
          throw new BatonError('failed', {
            what: `The store's answer was cut short ${attempt} time(s): the connection closed before the whole answer arrived.`,
            where: this.#where(key),
            next: 'Check the network path to the store (proxy, load balancer) and try again.',
            changed: 'Nothing was changed.',
            reason: 'cut-short',
            cause: error.cause,
          });
        }
      }
    }
  }

  async #getOnce(key: string, deadline: CallDeadline): Promise<StoredDocument | undefined> {
    const where = this.#where(key);
    let response;
    try {
      response = await this.#send(
        (abortSignal) =>
          this.#client.send(new GetObjectCommand({ Bucket: this.spec.bucket, Key: key }), { abortSignal }),
        deadline,
      );
    } catch (error) {
      // "ABSENT" MEANS S3 SAID ABSENT: only NoSuchKey (S3's own error, parsed from its XML).
      // A 404 from anything else — a web server at the wrong endpoint, a virtual-host name
      // that lands on another site — would otherwise read as "nothing published" and invite
      // this host to mint a second authority for the fleet.
      if (isNoSuchKey(error)) return undefined;
      throw classifyS3Error(error, where, 'read', this.spec, this.bounds);
    }
    const stream = bodyStreamOf(response.Body);
    if (response.ContentLength !== undefined && response.ContentLength > MAX_DOCUMENT_BYTES) {
      stream?.destroy?.();
      throw oversizeError(where, response.ContentLength, response.ETag);
    }
    let body: Uint8Array;
    try {
      body = await readBodyWithin(stream, deadline, MAX_DOCUMENT_BYTES, response.ContentLength);
    } catch (error) {
      if (error instanceof BodyOverLimit) throw oversizeError(where, undefined, response.ETag);
      if (error instanceof BodyStalled)
        throw bodyStalledError(error, where, this.bounds, deadline.waitedMs());
      throw new ShortBody(error);
    }
    const size = body.length;
    if (response.ContentLength !== undefined && size !== response.ContentLength) {
      throw new ShortBody(
        new Error(`the body ended after ${size} of ${response.ContentLength} bytes (ECONNRESET)`),
      );
    }
    if (!response.ETag) {
      throw new BatonError('failed', {
        what: 'The store answered without an ETag, so a later replace could not be made conditional.',
        where,
        next: 'Use an S3-compatible store that returns ETags.',
        changed: 'Nothing was written.',
        reason: 'no-etag',
      });
    }
    return { body, etag: response.ETag };
  }

  async #put(
    key: string,
    body: Uint8Array,
    precondition: Precondition | undefined,
  ): Promise<{ readonly etag: string }> {
    const where = this.#where(key);
    const input: PutObjectCommandInput = {
      Bucket: this.spec.bucket,
      Key: key,
      Body: body,
      ContentLength: body.length,
      ContentType: 'application/json',
      ...(precondition?.kind === 'create-only' ? { IfNoneMatch: '*' } : {}),
      ...(precondition?.kind === 'if-match' ? { IfMatch: precondition.etag } : {}),
      ...(this.spec.sse ? { ServerSideEncryption: this.spec.sse } : {}),
      ...(this.spec.kmsKeyId ? { SSEKMSKeyId: this.spec.kmsKeyId } : {}),
    };
    try {
      const response = await this.#send((abortSignal) =>
        this.#client.send(new PutObjectCommand(input), { abortSignal }),
      );
      return { etag: response.ETag ?? '' };
    } catch (error) {
      const { status, name } = fieldsOf(error);
      if (precondition && (status === 412 || name === 'PreconditionFailed')) {
        throw storeChangedError(
          where,
          precondition.kind === 'create-only' ? 'published-meanwhile' : 'replaced',
          error,
        );
      }
      if (precondition && (status === 409 || name === 'ConditionalRequestConflict')) {
        throw storeChangedError(where, 'write-in-progress', error);
      }
      if (precondition?.kind === 'if-match' && status === 404 && name !== 'NoSuchBucket') {
        throw storeChangedError(where, 'removed', error);
      }
      throw classifyS3Error(error, where, 'write', this.spec, this.bounds);
    }
  }

  #where(key: string): string {
    const via = this.spec.endpoint ? ` via ${this.spec.endpoint}` : '';
    return `s3://${this.spec.bucket}/${key}${via}`;
  }
}

/** The request ran past the total bound and was aborted; `waitedMs` is how long baton waited. */
class TotalBoundReached extends Error {
  override readonly name = 'TimeoutError';
  constructor(
    override readonly cause: unknown,
    readonly waitedMs: number,
  ) {
    super('the total time bound of the request was reached');
  }
}

/** The SDK's body as the stream it is in Node (an IncomingMessage): iterable and destroyable. */
function bodyStreamOf(
  body: unknown,
): (AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void }) | undefined {
  return body as (AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void }) | undefined;
}

/**
 * The headers came and the body stopped: said as such, with the bytes that arrived and how long
 * baton waited, because "did not answer" would send the operator looking for a dead endpoint
 * when it is a proxy or a store that stops mid-answer.
 */
function bodyStalledError(
  stalled: BodyStalled,
  where: string,
  bounds: S3Bounds,
  waitedMs: number,
): BatonError {
  const of = stalled.expected === undefined ? '' : ` of ${stalled.expected}`;
  return new BatonError('failed', {
    what: `The store sent its answer's headers, then stopped sending the body after ${stalled.received}${of} bytes; baton waited ${secondsWords(waitedMs)} (${boundsWords(bounds)}) and gave up.`,
    where,
    next: [
      'Check the network path to the store (proxy, load balancer) and the store itself, then try again; on a slow path, raise store_timeout in baton.yaml or --store-timeout SECONDS.',
      ...offlineRoute(),
    ],
    changed: 'Nothing was changed.',
    reason: 'timed-out',
    cause: stalled,
  });
}

/** A response body that ended before its Content-Length: transient, retried. */
class ShortBody extends Error {
  constructor(override readonly cause: unknown) {
    super('the response body was cut short');
  }
}

function isNoSuchKey(error: unknown): boolean {
  const { name, code } = fieldsOf(error);
  return name === 'NoSuchKey' || code === 'NoSuchKey';
}

/** The fields an SDK or Node error is classified by: never the words of its message. */
interface ErrorFields {
  /** HTTP status from `$metadata`, when the store answered at all. */
  readonly status: number | undefined;
  /** The SDK's error name (S3's error code for a service error, e.g. AccessDenied). */
  readonly name: string;
  /** S3's `Code`, or Node's `code` (ECONNREFUSED…), or the same on the error's cause. */
  readonly code: string | undefined;
  readonly causeCode: string | undefined;
  /** The store's Date header, when it answered: the clock this host is compared with. */
  readonly serverDate: Date | undefined;
}

function fieldsOf(error: unknown): ErrorFields {
  const e = error as
    | {
        $metadata?: { httpStatusCode?: number };
        $response?: { headers?: Record<string, string | undefined> };
        name?: string;
        Code?: string;
        code?: string;
        cause?: { code?: string };
      }
    | null
    | undefined;
  const date = e?.$response?.headers?.date ?? e?.$response?.headers?.Date;
  const serverDate = date ? new Date(date) : undefined;
  return {
    status: e?.$metadata?.httpStatusCode,
    name: e?.name ?? '',
    code: e?.Code ?? e?.code,
    causeCode: e?.cause?.code,
    serverDate: serverDate && !Number.isNaN(serverDate.getTime()) ? serverDate : undefined,
  };
}

/** S3 signs each request with the time; past 15 minutes apart it refuses, whatever the credentials. */
const SKEW_LIMIT_MS = 15 * 60_000;
const CLOCK_SKEW_NAMES = new Set([
  'RequestTimeTooSkewed',
  'RequestExpired',
  'RequestInTheFuture',
  'InvalidSignatureException',
]);
const DENIED_NAMES = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
]);
const WRONG_REGION_NAMES = new Set([
  'PermanentRedirect',
  'AuthorizationHeaderMalformed',
  'IllegalLocationConstraintException',
]);
const THROTTLED_NAMES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
]);
/** TLS spoken to a plain-HTTP port: OpenSSL's codes as Node reports them. */
const PLAIN_HTTP_CODES = new Set([
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
  'ERR_SSL_HTTP_REQUEST',
]);
/**
 * A connection closed mid-answer. The SDK's HTTP handler renames these errors TimeoutError
 * but keeps Node's code, so they are checked before the timeout.
 */
const CUT_SHORT_CODES = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ECONNABORTED']);
const UNRESOLVED_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN']);
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);

/**
 * Every failure other than "nothing published" and a failed precondition, in words that say
 * what to check. Classified by the error's fields (HTTP status, SDK error name, S3's code,
 * Node's code): a message is for people and changes between versions.
 */
function classifyS3Error(
  error: unknown,
  where: string,
  operation: Operation,
  spec?: S3StoreSpec,
  bounds: S3Bounds = s3Bounds(),
  now: () => Date = () => new Date(),
): BatonError {
  const { status, name, code, causeCode, serverDate } = fieldsOf(error);
  const codes = [code, causeCode].filter((c): c is string => c !== undefined);
  const hasCode = (set: ReadonlySet<string>) => codes.some((c) => set.has(c));
  // The SDK's name, code and message come from the server's answer: shown, never printed raw
  // (a hostile or broken endpoint could otherwise write on the operator's screen).
  const message = shown(error instanceof Error ? error.message : String(error));
  const nameShown = shown(name);
  const codesShown = codes.map((c) => shown(c));
  const changed = operation === 'read' ? 'Nothing was changed.' : 'Nothing was written.';
  // Virtual-host addressing puts the bucket in the host name (bucket.endpoint): most S3
  // emulators and many private endpoints only answer path-style, so every failure through a
  // custom endpoint without path_style says so.
  const virtualHost = spec?.endpoint !== undefined && !spec.pathStyle;
  const pathStyleHint = virtualHost
    ? ` The request used virtual-host addressing (${spec.bucket}.${hostOf(spec.endpoint)}); if the store only answers path-style, add path_style=true to the store URL.`
    : '';
  // A write whose answer was lost (timed out, cut short) may have landed: "Nothing was written"
  // would be a guess. The caller re-reads and says what is there (src/share/lost-answer.ts).
  const changedFor = (reason: StoreFailureReason) =>
    operation === 'write' && (reason === 'timed-out' || reason === 'cut-short')
      ? 'It is not known whether the write reached the store: re-read it before deciding.'
      : changed;
  // An outage is not the end of a failover: every "could not reach the store" names the
  // offline route (src/store/offline-route-steps.ts).
  const outage = (reason: StoreFailureReason) =>
    reason === 'unreachable' ||
    reason === 'timed-out' ||
    reason === 'cut-short' ||
    reason === 'server-error' ||
    reason === 'throttled';
  const fail = (reason: StoreFailureReason, what: string, next: string) =>
    new BatonError('failed', {
      what,
      where,
      next: outage(reason) ? [next + pathStyleHint, ...offlineRoute()] : next + pathStyleHint,
      changed: changedFor(reason),
      reason,
      cause: error,
    });
  const verb = { read: 'read', write: 'write', delete: 'delete' }[operation];

  if (error instanceof RegionMissing) {
    return fail('no-region', 'No AWS region is set.', 'Add ?region= to the store URL, or set AWS_REGION.');
  }
  if (hasCode(PLAIN_HTTP_CODES)) {
    return fail(
      'plain-http',
      `The endpoint ${spec?.endpoint ?? ''} answered in plain HTTP, but the store URL asks for TLS (https://).`.replace(
        '  ',
        ' ',
      ),
      "Use the endpoint's http:// address if it really serves plain HTTP (a local emulator), or point baton at the TLS port.",
    );
  }
  if (status === 404 && !isNoSuchKey(error) && name !== 'NoSuchBucket') {
    return fail(
      'not-s3',
      `Could not ${verb} the published document: the endpoint${spec?.endpoint ? ` ${spec.endpoint}` : ''} answered 404 without S3's error (NoSuchKey), so it is not known whether anything is published.`,
      'Check the endpoint (?endpoint= or AWS_ENDPOINT_URL_S3) is the S3 API and not a web page, and whether the store needs path_style=true.',
    );
  }
  if (name === 'NoSuchBucket') {
    return fail(
      'no-bucket',
      'The bucket does not exist.',
      'Check the bucket name in the store URL, and the region/endpoint it lives at.',
    );
  }
  if (status === 301 || WRONG_REGION_NAMES.has(name)) {
    return fail(
      'wrong-region',
      'The bucket is in a different region than the one baton asked.',
      "Set the bucket's region with ?region= in the store URL or AWS_REGION.",
    );
  }
  // Before "denied": a skewed clock is refused with 403 too, and no credential fixes it.
  const skewMs = serverDate ? Math.abs(now().getTime() - serverDate.getTime()) : undefined;
  if (CLOCK_SKEW_NAMES.has(name) || (status === 403 && skewMs !== undefined && skewMs > SKEW_LIMIT_MS)) {
    const by = skewMs !== undefined ? ` by ${skewWords(skewMs)}` : '';
    return fail(
      'clock-skew',
      `The store refused the request because this host's clock differs from the store's${by} (clock skew, ${nameShown || status}).`,
      "Fix this host's clock (enable NTP: timedatectl set-ntp true, or chronyc makestep), then try again. Credentials are not the problem.",
    );
  }
  if (status === 403 || DENIED_NAMES.has(name)) {
    return fail(
      'denied',
      `Access was denied (${nameShown || status}) when trying to ${verb} the published document.`,
      'Check the credentials baton runs with (AWS_PROFILE, instance role), the bucket policy, and with sse=aws:kms the KMS key policy.',
    );
  }
  if (status === 503 || status === 429 || THROTTLED_NAMES.has(name)) {
    return fail(
      'throttled',
      'The store is throttling requests (SlowDown) and the retries ran out.',
      'Wait a moment and try again.',
    );
  }
  if (name === 'CredentialsProviderError') {
    return fail(
      'no-credentials',
      'No AWS credentials were found.',
      'Set AWS_PROFILE, or run on a host with an instance role.',
    );
  }
  if (hasCode(CUT_SHORT_CODES)) {
    return fail(
      'cut-short',
      'The connection to the store was closed before the whole answer arrived, and the retries ran out.',
      'Check the network path to the store (proxy, load balancer, firewall) and try again.',
    );
  }
  if (
    name === 'TimeoutError' ||
    name === 'RequestTimeout' ||
    hasCode(new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT']))
  ) {
    const waited = error instanceof TotalBoundReached ? `; baton waited ${secondsWords(error.waitedMs)}` : '';
    return fail(
      'timed-out',
      `The store did not send its answer's headers in time (${boundsWords(bounds)})${waited}.`,
      'Check the endpoint and the network path to it (proxy, firewall, VPC endpoint); on a slow path, raise store_timeout in baton.yaml or --store-timeout SECONDS.',
    );
  }
  if (hasCode(UNRESOLVED_CODES) || hasCode(UNREACHABLE_CODES)) {
    const which = hasCode(UNRESOLVED_CODES)
      ? 'could not be resolved'
      : 'refused the connection or could not be reached';
    return fail(
      'unreachable',
      `The store's endpoint ${which}.`,
      'Check the endpoint (?endpoint= or AWS_ENDPOINT_URL_S3) and that the store is running and reachable.',
    );
  }
  if (status !== undefined && status >= 500) {
    return fail(
      'server-error',
      `The store failed with HTTP ${status} (${nameShown}).`,
      "Try again; if it persists, check the store's health.",
    );
  }
  return fail(
    'other',
    `The store could not ${verb} the published document (${nameShown || 'error'}${status ? `, HTTP ${status}` : ''}${codesShown.length ? `, ${codesShown.join('/')}` : ''}: ${message}).`,
    'Check the store URL, credentials and region.',
  );
}

/** A clock difference in words an operator reads at a glance: never "about 0 minutes". */
export function skewWords(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 90) return `about ${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.round(ms / 60_000);
  if (minutes < 90) return `about ${minutes} minutes`;
  const hours = Math.round((ms / 3_600_000) * 10) / 10;
  return `about ${hours} hours`;
}

/** The SDK could not resolve a region: raised by the adapter itself, before any request. */
class RegionMissing extends Error {
  constructor(override readonly cause: unknown) {
    super('no region');
  }
}

function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}
