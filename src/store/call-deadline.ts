/**
 * One deadline for a whole store call: connect, headers AND body, every retry included. The
 * SDKs' own timeouts are per attempt and end when the headers arrive, so a store that sent its
 * headers and then went silent held baton for as long as it liked (10 body bytes then silence:
 * 67.6 s; half a body then silence: for ever). Everything a call waits on takes this signal,
 * and a body is read through `readBodyWithin`, which gives up when the deadline is reached.
 */

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
