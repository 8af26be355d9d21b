/**
 * The SSM Parameter Store adapter (docs/configuration.md "SSM Parameter Store"): billet's identity
 * store. The document is the SecureString `<prefix>/node-wire-authority` — billet's name and
 * type — so a billet controller and a baton host read and write the same parameter. Loaded
 * lazily by `openStore`: only an ssm:// URL pays for the SDK.
 *
 * THE ETAG IS THE PARAMETER'S VERSION (`"7"`). Parameter Store numbers every write of a
 * parameter, so the version names the content that was read exactly as an S3 ETag does.
 *
 * CONDITIONAL WRITES, HONESTLY. Create-only is SSM's own: PutParameter with Overwrite=false is
 * refused (ParameterAlreadyExists) when anything is there. A replace has no compare-and-swap:
 * baton reads the version just before its write (a stale one is refused, nothing written) and
 * checks the version the write returned. A jump — not read + 1 — means another writer came
 * between the two; baton then puts that writer's document back (as a refused If-Match would
 * have left it) and says both versions: the history keeps every one.
 */
import {
  DeleteParameterCommand,
  GetParameterCommand,
  GetParameterHistoryCommand,
  GetParametersByPathCommand,
  PutParameterCommand,
  SSMClient,
  type PutParameterCommandInput,
  type SSMClientConfig,
} from '@aws-sdk/client-ssm';
import { BatonError, type StoreFailureReason } from '../errors.js';
import { shown } from '../outside-text.js';
import { MAX_DOCUMENT_BYTES, oversizeError } from './body-limit.js';
import { offlineRoute } from './offline-route-steps.js';
import { probeConditionalWrites } from './probe.js';
import type { S3StoreOptions } from './s3-store.js';
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
import { SSM_PARAMETER_LEAF, kmsSealWords, type SsmStoreSpec } from './store-url.js';
import { callBounds, type CallBounds } from './call-deadline.js';

/** The same choices as S3's: static keys for an emulator, and the per-attempt bounds. */
export type SsmStoreOptions = S3StoreOptions;

/** A standard-tier value holds at most 4 KB; an advanced one 8 KB (AWS's documented limits). */
export const SSM_STANDARD_MAX_BYTES = 4096;
export const SSM_ADVANCED_MAX_BYTES = 8192;

/** The one deadline a whole store call runs under, and the per-attempt bounds it is made of (call-deadline.ts). */
export type SsmDeadline = CallBounds;

export function ssmDeadline(options: SsmStoreOptions = {}): SsmDeadline {
  return callBounds(options);
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

type Operation = 'read' | 'write' | 'delete';

/** What the version re-read just before a replace found. */
interface CurrentVersion {
  readonly version: number;
}

export class SsmStore implements Store {
  readonly location: string;
  readonly deadline: SsmDeadline;
  readonly #client: SSMClient;
  #regionChecked: Promise<void> | undefined;
  #clock: ClockReading | undefined;

  constructor(
    readonly spec: SsmStoreSpec,
    options: SsmStoreOptions = {},
  ) {
    this.location = `ssm://${spec.name}`;
    this.deadline = ssmDeadline(options);
    // The SDK warns about Node 20 on stderr, which would tear a full-screen view.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const config: SSMClientConfig = {
      maxAttempts: this.deadline.attempts,
      retryMode: 'standard',
      requestHandler: {
        connectionTimeout: this.deadline.connectMs,
        requestTimeout: this.deadline.requestMs,
        throwOnRequestTimeout: true,
      },
      ...(spec.region ? { region: spec.region } : {}),
      ...(spec.endpoint ? { endpoint: spec.endpoint } : {}),
    };
    if (options.credentials) config.credentials = { ...options.credentials };
    this.#client = new SSMClient(config);
    // Every answer's Date header is the clock a mint is checked against (as for S3).
    this.#client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const headers = (out.response as { headers?: Record<string, string | undefined> }).headers;
        const at = headers?.date ? new Date(headers.date) : undefined;
        if (at && !Number.isNaN(at.getTime())) this.#clock = { store: at, local: new Date() };
        return out;
      },
      { step: 'deserialize', name: 'batonStoreDate', priority: 'low' },
    );
  }

  /** What seals the document at rest on this store: KMS, never baton's own seal. */
  atRestSeal(): string {
    return kmsSealWords(this.spec.kmsKeyId);
  }

  lastClockReading(): ClockReading | undefined {
    return this.#clock;
  }

  async get(): Promise<StoredDocument | undefined> {
    return this.#get(this.spec.name);
  }

  async put(body: Uint8Array, precondition?: Precondition): Promise<{ readonly etag: string }> {
    return this.#put(this.spec.name, body, precondition);
  }

  async checkConditionalWrites(): Promise<ConditionalWriteCheck> {
    const check = await probeConditionalWrites({
      location: `ssm://${this.spec.prefix}/`,
      write: (name, body, precondition) => this.#put(`${this.spec.prefix}/${name}`, body, precondition),
      remove: (name) => this.#remove(`${this.spec.prefix}/${name}`),
    });
    if (!check.enforced) return check;
    // The generic words name If-None-Match / If-Match, which SSM does not have: say what it does.
    return {
      ...check,
      detail: `Parameter Store at ${this.location} refused a second create-only write (PutParameter Overwrite=false → ParameterAlreadyExists): create-only is enforced, so two first controllers cannot both publish. It has no compare-and-swap on a replace: baton refuses a replace when the version it read is no longer current, and a writer that comes between that check and the write is detected after the fact (the version the write returned is not the next one), said with both versions, and put back.`,
    };
  }

  /** Every version Parameter Store keeps (the last 100), decrypted: `store check`'s clear-key scan. */
  async documentVersions(): Promise<DocumentVersions> {
    const versions: DocumentVersion[] = [];
    let nextToken: string | undefined;
    try {
      for (let page = 0; page < 20; page++) {
        const answer = await this.#send('GetParameterHistory', (abortSignal) =>
          this.#client.send(
            new GetParameterHistoryCommand({
              Name: this.spec.name,
              WithDecryption: true,
              MaxResults: 50,
              NextToken: nextToken,
            }),
            { abortSignal },
          ),
        );
        for (const v of answer.Parameters ?? []) {
          if (v.Version === undefined) continue;
          const bytes = v.Value === undefined ? undefined : new TextEncoder().encode(v.Value);
          versions.push({
            versionId: String(v.Version),
            lastModified: v.LastModifiedDate,
            isLatest: false,
            body: bytes && bytes.length <= MAX_DOCUMENT_BYTES ? bytes : undefined,
            atRest:
              v.Type === 'SecureString'
                ? { encrypted: true, words: `SecureString under KMS key ${v.KeyId ?? '(not said)'}` }
                : { encrypted: false, words: `${v.Type ?? 'an unknown type'}, not encrypted` },
          });
        }
        nextToken = answer.NextToken;
        if (!nextToken) break;
      }
    } catch (error) {
      if (nameOf(error) === 'ParameterNotFound') return { listed: true, versions: [] };
      return {
        listed: false,
        why: classifySsmError(error, this.#where(this.spec.name), 'read', this.spec, this.deadline).what,
      };
    }
    const newest = Math.max(...versions.map((v) => Number(v.versionId)));
    return {
      listed: true,
      versions: versions.map((v) => (Number(v.versionId) === newest ? { ...v, isLatest: true } : v)),
    };
  }

  /**
   * Documents at neighbouring prefixes: GetParametersByPath on the parent, recursive, a bounded
   * number of pages, keeping the names that end in /node-wire-authority. Never throws.
   */
  async neighbours(): Promise<readonly NeighbourDocument[]> {
    const cut = this.spec.prefix.lastIndexOf('/');
    const parent = cut <= 0 ? '/' : this.spec.prefix.slice(0, cut);
    const found: NeighbourDocument[] = [];
    let nextToken: string | undefined;
    try {
      for (let page = 0; page < 10 && found.length < NEIGHBOUR_LIMIT; page++) {
        const answer = await this.#send('GetParametersByPath', (abortSignal) =>
          this.#client.send(
            new GetParametersByPathCommand({
              Path: parent,
              Recursive: true,
              WithDecryption: true,
              MaxResults: 10,
              NextToken: nextToken,
            }),
            { abortSignal },
          ),
        );
        for (const p of answer.Parameters ?? []) {
          if (!p.Name || p.Name === this.spec.name || !p.Name.endsWith(`/${SSM_PARAMETER_LEAF}`)) continue;
          const body = new TextEncoder().encode(p.Value ?? '');
          if (body.length === 0 || body.length > NEIGHBOUR_MAX_BYTES) continue;
          if (found.length < NEIGHBOUR_LIMIT) found.push({ location: `ssm://${p.Name}`, body });
        }
        nextToken = answer.NextToken;
        if (!nextToken) break;
      }
    } catch {
      return found;
    }
    return found;
  }

  /** Ends the client's sockets (tests; the CLI simply exits). */
  destroy(): void {
    this.#client.destroy();
  }

  async #get(name: string): Promise<StoredDocument | undefined> {
    let answer;
    try {
      answer = await this.#send('GetParameter', (abortSignal) =>
        this.#client.send(new GetParameterCommand({ Name: name, WithDecryption: true }), { abortSignal }),
      );
    } catch (error) {
      // "ABSENT" MEANS PARAMETER STORE SAID ABSENT: only its own ParameterNotFound. Anything
      // else read as "nothing published" would invite this host to mint a second authority.
      if (nameOf(error) === 'ParameterNotFound') return undefined;
      throw classifySsmError(error, this.#where(name), 'read', this.spec, this.deadline);
    }
    const value = answer.Parameter?.Value;
    const version = answer.Parameter?.Version;
    if (value === undefined || value === '' || version === undefined) {
      // Parameter Store never stores an empty value (billet's awsssm says the same): an answer
      // without one came from something that is not Parameter Store.
      throw new BatonError('failed', {
        what: 'Parameter Store answered without a value or a version, which it never stores; something other than Parameter Store answered.',
        where: this.#where(name),
        next: 'Check the endpoint (?endpoint= or AWS_ENDPOINT_URL_SSM) is the SSM API.',
        changed: 'Nothing was changed.',
        reason: 'no-etag',
      });
    }
    const body = new TextEncoder().encode(value);
    if (body.length > MAX_DOCUMENT_BYTES)
      throw oversizeError(this.#where(name), body.length, etagOf(version));
    return { body, etag: etagOf(version) };
  }

  /** The version current now, or undefined when the parameter does not exist. Not decrypted. */
  async #currentVersion(name: string): Promise<CurrentVersion | undefined> {
    try {
      const answer = await this.#send('GetParameter', (abortSignal) =>
        this.#client.send(new GetParameterCommand({ Name: name, WithDecryption: false }), { abortSignal }),
      );
      const version = answer.Parameter?.Version;
      if (version === undefined) throw new Error('GetParameter answered without a Version');
      return { version };
    } catch (error) {
      if (nameOf(error) === 'ParameterNotFound') return undefined;
      throw classifySsmError(error, this.#where(name), 'read', this.spec, this.deadline);
    }
  }

  async #put(
    name: string,
    body: Uint8Array,
    precondition: Precondition | undefined,
  ): Promise<{ readonly etag: string }> {
    const where = this.#where(name);
    const value = utf8Value(body, where);
    let read: CurrentVersion | undefined;
    if (precondition?.kind === 'if-match') {
      // The re-read just before the write: a stale version is refused with nothing written.
      read = await this.#currentVersion(name);
      if (!read) throw storeChangedError(where, 'removed');
      if (etagOf(read.version) !== precondition.etag) throw storeChangedError(where, 'replaced');
    }
    const written = await this.#putParameter(name, value, body.length, precondition?.kind !== 'create-only');
    if (read && written !== read.version + 1) {
      await this.#interleaved(name, body, read.version, written);
    }
    return { etag: etagOf(written) };
  }

  async #putParameter(name: string, value: string, size: number, overwrite: boolean): Promise<number> {
    const where = this.#where(name);
    if (size > SSM_ADVANCED_MAX_BYTES) {
      throw new BatonError('refused', {
        what: `The document is ${size} bytes; a Parameter Store value holds at most ${SSM_ADVANCED_MAX_BYTES} (advanced tier), so it cannot be published there.`,
        where,
        next: 'Publish fewer files (retire the previous authority with `ca retire` first), or use an S3 store for this deployment.',
        changed: 'Nothing was written.',
        reason: 'oversize',
      });
    }
    const input: PutParameterCommandInput = {
      Name: name,
      Value: value,
      Type: 'SecureString',
      Overwrite: overwrite,
      // Over 4 KB a standard parameter is refused, so the tier is chosen from the size. Under it,
      // Intelligent-Tiering (billet's choice) keeps a new parameter standard and an advanced one
      // advanced: an explicit "Standard" would be refused on a parameter once promoted.
      Tier: size > SSM_STANDARD_MAX_BYTES ? 'Advanced' : 'Intelligent-Tiering',
      Description:
        "billet node-wire certificate authority (published by baton); every node in this deployment's fleet verifies its control plane against it",
      ...(this.spec.kmsKeyId ? { KeyId: this.spec.kmsKeyId } : {}),
    };
    try {
      const answer = await this.#send('PutParameter', (abortSignal) =>
        this.#client.send(new PutParameterCommand(input), { abortSignal }),
      );
      if (answer.Version === undefined) throw new Error('PutParameter answered without a Version');
      return answer.Version;
    } catch (error) {
      const name_ = nameOf(error);
      if (!overwrite && name_ === 'ParameterAlreadyExists')
        throw storeChangedError(where, 'published-meanwhile', error);
      // SSM's own "another update of this parameter is in progress": S3's 409, the same outcome.
      if (name_ === 'TooManyUpdates') throw storeChangedError(where, 'write-in-progress', error);
      throw classifySsmError(error, where, 'write', this.spec, this.deadline);
    }
  }

  /**
   * Another writer came between the version check and the write: its version(s) sit between
   * `read` and `written`. Versions holding this host's own bytes are the SDK retrying a write
   * whose answer was lost, not another writer. Otherwise the other writer's document is put
   * back — what a refused If-Match would have left — and the refusal names every version.
   */
  async #interleaved(name: string, body: Uint8Array, read: number, written: number): Promise<void> {
    const where = this.#where(name);
    const between: { version: number; body: Uint8Array | undefined }[] = [];
    for (let v = read + 1; v < written; v++)
      between.push({ version: v, body: await this.#versionBody(name, v) });
    const ours = Buffer.from(body);
    const others = between.filter((b) => !b.body || !ours.equals(Buffer.from(b.body)));
    if (others.length === 0 && written > read) return;
    const theirs = others.at(-1);
    const versionsWords = others.map((o) => o.version).join(', ') || 'unknown';
    const said = `Parameter Store has no compare-and-swap on a replace: baton read version ${read}, another writer wrote version ${versionsWords} before baton's write landed as version ${written}`;
    let restored: string;
    // Only while this host's write is still the current one: a writer after it is newer than
    // both, and putting the older document back over it would lose it.
    const now = theirs?.body ? await this.#currentVersion(name).catch(() => undefined) : undefined;
    if (theirs?.body && now?.version !== written) {
      restored = `the parameter has moved on since (version ${now?.version ?? 'unknown'}), so nothing was put back`;
    } else if (theirs?.body) {
      try {
        const back = await this.#putParameter(name, utf8Value(theirs.body, where), theirs.body.length, true);
        restored =
          back === written + 1
            ? `baton put version ${theirs.version}'s document back as version ${back}, so the store holds the other writer's document`
            : `baton put version ${theirs.version}'s document back as version ${back}, but yet another writer came between (expected ${written + 1}): read the history before deciding`;
      } catch (error) {
        restored = `putting version ${theirs.version}'s document back failed (${error instanceof BatonError ? error.what : 'error'}): version ${written} (this host's) is current`;
      }
    } else {
      restored = `the other writer's version could not be read, so version ${written} (this host's) is current`;
    }
    throw new BatonError('store-changed', {
      what: `The store changed while this host was replacing the document. ${said}; ${restored}.`,
      where,
      changed: `The parameter's history keeps every version (${read} to ${written} and after): aws ssm get-parameter-history --name ${name}`,
      next: 'Re-read the published authority and decide again.',
      reason: 'replaced',
    });
  }

  async #versionBody(name: string, version: number): Promise<Uint8Array | undefined> {
    try {
      const answer = await this.#send('GetParameter', (abortSignal) =>
        this.#client.send(new GetParameterCommand({ Name: `${name}:${version}`, WithDecryption: true }), {
          abortSignal,
        }),
      );
      return answer.Parameter?.Value === undefined
        ? undefined
        : new TextEncoder().encode(answer.Parameter.Value);
    } catch {
      return undefined;
    }
  }

  async #remove(name: string): Promise<void> {
    try {
      await this.#send('DeleteParameter', (abortSignal) =>
        this.#client.send(new DeleteParameterCommand({ Name: name }), { abortSignal }),
      );
    } catch (error) {
      if (nameOf(error) === 'ParameterNotFound') return;
      throw classifySsmError(error, this.#where(name), 'delete', this.spec, this.deadline);
    }
  }

  /**
   * Every request goes through here. ONE DEADLINE BOUNDS THE WHOLE CALL: the SDK parses the
   * JSON body inside `send`, so aborting `send` covers connect, headers, body and retries; a
   * store that trickles cannot hold a failover past it. The region is resolved first, once.
   */
  async #send<T>(call: string, request: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    this.#regionChecked ??= this.#client.config.region().then(
      () => undefined,
      (error: unknown) => {
        throw new RegionMissing(error);
      },
    );
    await this.#regionChecked;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.deadline.totalMs);
    try {
      return await request(deadline.signal);
    } catch (error) {
      if (deadline.signal.aborted) throw new CallStalled(call, this.deadline, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  #where(name: string): string {
    return `ssm://${name}${this.spec.endpoint ? ` via ${this.spec.endpoint}` : ''}${this.spec.region ? ` (${this.spec.region})` : ''}`;
  }
}

/** The port's ETag for a parameter version: quoted, as every store's is. */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/** A Parameter Store value is a string: a document that is not UTF-8 could not come back byte for byte. */
function utf8Value(body: Uint8Array, where: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw new BatonError('refused', {
      what: 'The document is not UTF-8 text, and a Parameter Store value is a string: it would not read back byte for byte.',
      where,
      next: 'Publish an unsealed document (a sealed one is binary, and billet could not read it anyway).',
      changed: 'Nothing was written.',
      reason: 'other',
    });
  }
}

/** A whole store call ran past its deadline and was aborted. */
class CallStalled extends Error {
  override readonly name = 'CallStalled';
  constructor(
    readonly call: string,
    readonly deadline: SsmDeadline,
    override readonly cause: unknown,
  ) {
    super(`${call} ran past ${deadline.totalMs} ms`);
  }
}

class RegionMissing extends Error {
  constructor(override readonly cause: unknown) {
    super('no region');
  }
}

function nameOf(error: unknown): string {
  const e = error as { name?: unknown; __type?: unknown } | null | undefined;
  return typeof e?.name === 'string' ? e.name : '';
}

const DENIED = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidClientTokenId',
  'ExpiredTokenException',
  'MissingAuthenticationTokenException',
  'IncompleteSignature',
]);
const CLOCK_SKEW = new Set(['InvalidSignatureException', 'SignatureDoesNotMatch', 'RequestExpired']);
const THROTTLED = new Set(['ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded']);
/** KMS refusals as Parameter Store passes them on (a key denied, disabled, missing or pending deletion). */
const KMS_REFUSED = new Set([
  'InvalidKeyId',
  'KMSAccessDeniedException',
  'KMSDisabledException',
  'KMSInvalidStateException',
  'KMSNotFoundException',
  'KMSKeyNotAccessibleException',
  'DisabledException',
  'KeyUnavailableException',
]);
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);
const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN']);
const CUT_SHORT = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ECONNABORTED']);

/**
 * Every failure other than "nothing published" and a failed precondition, classified by the
 * error's fields (SDK name, HTTP status, Node's code) as S3's are, each with what to do.
 */
export function classifySsmError(
  error: unknown,
  where: string,
  operation: Operation,
  spec?: Pick<SsmStoreSpec, 'name' | 'kmsKeyId' | 'endpoint'>,
  deadline: SsmDeadline = ssmDeadline(),
): BatonError {
  const e = error as
    { $metadata?: { httpStatusCode?: number }; code?: string; cause?: { code?: string } } | null | undefined;
  const status = e?.$metadata?.httpStatusCode;
  const name = nameOf(error);
  const codes = [e?.code, e?.cause?.code].filter((c): c is string => typeof c === 'string');
  const has = (set: ReadonlySet<string>) => codes.some((c) => set.has(c));
  const nameShown = shown(name);
  const verb = { read: 'read', write: 'write', delete: 'delete' }[operation];
  const param = spec?.name ?? 'the parameter';
  const key = spec?.kmsKeyId ?? 'alias/aws/ssm';
  const lost = operation === 'write';
  const fail = (reason: StoreFailureReason, what: string, next: string) => {
    const outage = ['unreachable', 'timed-out', 'cut-short', 'server-error', 'throttled'].includes(reason);
    return new BatonError('failed', {
      what,
      where,
      next: outage ? [next, ...offlineRoute()] : next,
      changed:
        lost && (reason === 'timed-out' || reason === 'cut-short')
          ? 'It is not known whether the write reached the store: re-read it before deciding.'
          : operation === 'read'
            ? 'Nothing was changed.'
            : 'Nothing was written.',
      reason,
      cause: error,
    });
  };

  if (error instanceof RegionMissing)
    return fail('no-region', 'No AWS region is set.', 'Add ?region= to the store URL, or set AWS_REGION.');
  if (error instanceof CallStalled) {
    const d = error.deadline;
    return fail(
      'timed-out',
      `Parameter Store did not finish ${error.call} within ${seconds(d.totalMs)}: baton waited that long (${d.attempts} attempt(s) of at most ${seconds(d.connectMs)} to connect and ${seconds(d.requestMs)} to answer, headers and body included) and stopped.`,
      'Check the endpoint and the network path to it (proxy, firewall, VPC endpoint for ssm); on a slow path, raise store_timeout in baton.yaml or --store-timeout SECONDS.',
    );
  }
  if (KMS_REFUSED.has(name))
    return fail(
      'denied',
      `KMS refused the key that encrypts the SecureString (${nameShown}) when trying to ${verb} ${param}: the key ${key} is denied to these credentials, disabled, pending deletion or does not exist.`,
      `Check the KMS key (aws kms describe-key --key-id ${key}): it must be enabled, and its key policy must allow kms:Decrypt (read) and kms:Encrypt / kms:GenerateDataKey (write) to the credentials baton runs with; or fix kms_key_id in the store URL.`,
    );
  if (CLOCK_SKEW.has(name))
    return fail(
      'clock-skew',
      `Parameter Store refused the request's signature (${nameShown}); a clock off by more than 5 minutes is the usual cause.`,
      "Fix this host's clock (timedatectl set-ntp true, or chronyc makestep); if the clock is right, check the secret key baton runs with.",
    );
  if (DENIED.has(name) || status === 403)
    return fail(
      'denied',
      `Access was denied (${nameShown || status}) when trying to ${verb} ${param}.`,
      `Check the credentials baton runs with (AWS_PROFILE, instance role) and that their IAM policy allows ssm:GetParameter, ssm:PutParameter, ssm:GetParameterHistory and ssm:GetParametersByPath on ${param} (billet scopes these by the prefix), plus kms:Decrypt / kms:Encrypt on ${key}.`,
    );
  if (THROTTLED.has(name) || status === 429)
    return fail(
      'throttled',
      `Parameter Store is throttling requests (${nameShown || status}) and the retries ran out.`,
      'Wait a moment and try again; if it persists, raise the account\'s Parameter Store throughput (aws ssm update-service-setting, "high throughput").',
    );
  if (name === 'CredentialsProviderError')
    return fail(
      'no-credentials',
      'No AWS credentials were found.',
      'Set AWS_PROFILE, or run on a host with an instance role.',
    );
  if (name === 'ParameterNotFound')
    return fail(
      'other',
      `Parameter Store has nothing at ${param}: nothing is published there.`,
      'Check the prefix in the store URL (billet: identity.aws_ssm.prefix).',
    );
  if (name === 'ParameterMaxVersionLimitExceeded')
    return fail(
      'other',
      `${param} has 100 versions and the oldest carries a label, so Parameter Store refuses another.`,
      `Remove the label from the oldest version (aws ssm unlabel-parameter-version --name ${param}), then try again.`,
    );
  if (name === 'ParameterLimitExceeded')
    return fail(
      'other',
      'The account holds as many parameters as its tier allows, so Parameter Store refuses a new one.',
      'Delete unused parameters, or raise the limit (advanced parameters), then try again.',
    );
  if (
    name === 'ValidationException' ||
    name === 'HierarchyLevelLimitExceededException' ||
    name === 'UnsupportedParameterType'
  )
    return fail(
      'other',
      `Parameter Store refused the request as invalid (${nameShown}: ${shown(error instanceof Error ? error.message : '')}).`,
      'Check the prefix in the store URL (letters, digits, . - _ and /, at most 15 levels) and the document size (at most 8 KB).',
    );
  if (has(CUT_SHORT))
    return fail(
      'cut-short',
      'The connection to Parameter Store closed before the whole answer arrived, and the retries ran out.',
      'Check the network path to the store (proxy, firewall) and try again.',
    );
  if (name === 'TimeoutError' || has(new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT'])))
    return fail(
      'timed-out',
      `Parameter Store did not answer in time: baton waited ${deadline.attempts} attempt(s) of at most ${seconds(deadline.connectMs)} to connect and ${seconds(deadline.requestMs)} for each answer.`,
      'Check the endpoint and the network path to it; on a slow path, raise store_timeout in baton.yaml or --store-timeout SECONDS.',
    );
  if (has(UNRESOLVED) || has(UNREACHABLE))
    return fail(
      'unreachable',
      `Parameter Store's endpoint${spec?.endpoint ? ` ${spec.endpoint}` : ''} ${has(UNRESOLVED) ? 'could not be resolved' : 'refused the connection or could not be reached'}.`,
      'Check the endpoint (?endpoint= or AWS_ENDPOINT_URL_SSM) and that the store is reachable.',
    );
  if (name === 'InternalServerError' || (status !== undefined && status >= 500))
    return fail(
      'server-error',
      `Parameter Store failed on its side (${nameShown || 'error'}${status ? `, HTTP ${status}` : ''}).`,
      "Try again; if it persists, check AWS's service health for Systems Manager in this region.",
    );
  return fail(
    'other',
    `Parameter Store could not ${verb} ${param} (${nameShown || 'error'}${status ? `, HTTP ${status}` : ''}: ${shown(error instanceof Error ? error.message : String(error))}).`,
    'Check the store URL, credentials and region.',
  );
}
