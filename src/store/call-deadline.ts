/**
 * One deadline for a whole store call: connect, headers AND body, every retry included. The
 * SDKs' own timeouts are per attempt and end when the headers arrive, so a store that sent its
 * headers and then went silent held baton for as long as it liked (10 body bytes then silence:
 * 67.6 s; half a body then silence: for ever). Everything a call waits on takes this signal,
 * and a body is read through `readBodyWithin`, which gives up when the deadline is reached.
 */

/** The per-attempt bounds a store's SDK client is built with (every field optional: defaults below). */
export interface CallBoundOptions {
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  readonly maxAttempts?: number;
}

/** Each attempt's bounds, and the total one call can never exceed (status and errors say them). */
export interface CallBounds {
  readonly connectMs: number;
  readonly requestMs: number;
  readonly attempts: number;
  /** attempts × (connect + request) + the retries' pauses: the most one call can take. */
  readonly totalMs: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
const DEFAULT_ATTEMPTS = 3;
/** What the SDK's standard retry waits between attempts, at most, with 3 attempts (0.2 s + 0.4 s), rounded up. */
const RETRY_PAUSE_ALLOWANCE_MS = 1_000;

/**
 * ONE FORMULA for every store kind (S3, SSM): the bounds each attempt gets and the deadline the
 * whole call runs under. Two copies would let one store's words promise a bound its call
 * does not keep.
 */
export function callBounds(options: CallBoundOptions = {}): CallBounds {
  const connectMs = options.connectionTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const requestMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const attempts = options.maxAttempts ?? DEFAULT_ATTEMPTS;
  return {
    connectMs,
    requestMs,
    attempts,
    totalMs: attempts * (connectMs + requestMs) + RETRY_PAUSE_ALLOWANCE_MS,
  };
}
export class CallDeadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #startedAt = Date.now();

  constructor(readonly totalMs: number) {
    this.#timer = setTimeout(() => this.#controller.abort(), totalMs);
    // A CLI that finished its work must not wait out the bound of a call it no longer needs.
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get reached(): boolean {
    return this.#controller.signal.aborted;
  }

  /** How long the call has waited so far, in milliseconds. */
  waitedMs(): number {
    return Date.now() - this.#startedAt;
  }

  /** Ends the timer; call when the whole call (body included) is done. */
  end(): void {
    clearTimeout(this.#timer);
  }
}

/** The body stopped arriving before the deadline, or failed; `received` bytes had come. */
export class BodyStalled extends Error {
  constructor(
    readonly received: number,
    readonly expected: number | undefined,
  ) {
    super(`the body stopped after ${received}${expected === undefined ? '' : ` of ${expected}`} bytes`);
  }
}

/** The body's chunks were more than `limit` bytes: the caller refuses the document. */
export class BodyOverLimit extends Error {
  constructor() {
    super('the body is over its limit');
  }
}

/**
 * Reads a response body under `deadline`: at the deadline the stream is destroyed and the read
 * fails with BodyStalled (bytes received so far, bytes promised); over `limit` it stops early
 * with BodyOverLimit. Any other failure of the stream is rethrown as it came.
 */
export async function readBodyWithin(
  stream: (AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void }) | undefined,
  deadline: CallDeadline,
  limit: number,
  expected: number | undefined,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const stop = () => stream?.destroy?.(new BodyStalled(size, expected));
  if (deadline.reached) stop();
  deadline.signal.addEventListener('abort', stop, { once: true });
  try {
    for await (const chunk of stream ?? []) {
      size += chunk.length;
      if (size > limit) {
        stream?.destroy?.();
        throw new BodyOverLimit();
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (deadline.reached) throw new BodyStalled(size, expected);
    throw error;
  } finally {
    deadline.signal.removeEventListener('abort', stop);
  }
  // A stream that ends quietly once destroyed at the deadline is a stall too, not a short body.
  if (deadline.reached && expected !== undefined && size !== expected) throw new BodyStalled(size, expected);
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return body;
}

/** "3.2 s": how long baton waited, as the words say it. */
export function secondsWords(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
