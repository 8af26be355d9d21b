/**
 * A terminal as Ink sees it, without a pty: an 80×24 TTY stdout that counts every byte it is
 * given (what an SSH session would carry), and a TTY stdin the bench types into.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';

export class CountingTerminal extends Writable {
  readonly isTTY = true;
  readonly columns: number;
  readonly rows: number;
  bytes = 0;
  writes = 0;
  /** The last few frames' text (Ink brackets each frame in separate synchronized-output writes). */
  recent = '';

  constructor(columns = 80, rows = 24) {
    super({ decodeStrings: false });
    this.columns = columns;
    this.rows = rows;
  }

  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    done: (error?: Error | null) => void,
  ): void {
    this.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    this.writes += 1;
    this.recent = (this.recent + String(chunk)).slice(-16_384);
    done();
  }
}

/** The stdin Ink reads keys from: `type` delivers one keypress the way a terminal would. */
export class TypingStdin extends EventEmitter {
  readonly isTTY = true;
  private pending: string | null = null;

  type(text: string): void {
    this.pending = text;
    this.emit('readable');
    this.emit('data', text);
  }

  read(): string | null {
    const text = this.pending;
    this.pending = null;
    return text;
  }

  setEncoding(): this {
    return this;
  }
  setRawMode(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}
