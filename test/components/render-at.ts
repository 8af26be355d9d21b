/**
 * ink-testing-library's render, at a chosen terminal width. Its stdout is fixed at 100
 * columns, and Ink lays the root out at the stream's width — a 120-column screen rendered
 * into it would be squeezed, and an 80-column one would hide overflow. Views also take
 * `columns` as a prop; this makes the stream agree with it.
 */
import { EventEmitter } from 'node:events';
import type { ReactElement } from 'react';
import { render as inkRender } from 'ink';
import { vi } from 'vitest';

class Stdout extends EventEmitter {
  readonly frames: string[] = [];
  isTTY = true;
  constructor(
    readonly columns: number,
    readonly rows = 24,
  ) {
    super();
  }
  write = (frame: string) => {
    this.frames.push(frame);
    return true;
  };
  /** The last frame with something visible (Ink writes a bare cursor-show escape on exit). */
  lastFrame = () =>
    this.frames.findLast((frame) => frame.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').trim() !== '');
}

class Stdin extends EventEmitter {
  isTTY = true;
  private data: string | null = null;
  write = (data: string) => {
    this.data = data;
    this.emit('readable');
    this.emit('data', data);
  };
  read = () => {
    const { data } = this;
    this.data = null;
    return data;
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
}

export interface Rendered {
  readonly stdin: Stdin;
  lastFrame(): string;
  unmount(): void;
  /** Resolves once a frame satisfies `predicate` (never a fixed sleep), then lets effects settle. */
  waitFor(predicate: (frame: string) => boolean, what: string): Promise<string>;
  /** Writes a key once the current frame is committed. */
  press(key: string): Promise<void>;
}

export const KEY = {
  enter: '\r',
  escape: '\u001b',
  up: '\u001b[A',
  down: '\u001b[B',
  ctrlC: '\u0003',
} as const;

/** `rows`: the terminal's height as views read it (useTerminalSize); 24 when not given. */
export function renderAt(tree: ReactElement, columns: number, rows = 24): Rendered {
  const stdout = new Stdout(columns, rows);
  const stderr = new Stdout(columns);
  const stdin = new Stdin();
  const instance = inkRender(tree, {
    stdout: stdout as unknown as NodeJS.WriteStream,
    stderr: stderr as unknown as NodeJS.WriteStream,
    stdin: stdin as unknown as NodeJS.ReadStream,
    debug: true,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  const lastFrame = () => stdout.lastFrame() ?? '';
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    stdin,
    lastFrame,
    unmount: () => {
      instance.unmount();
      instance.cleanup();
    },
    async waitFor(predicate, what) {
      await vi.waitFor(
        () => {
          if (!predicate(lastFrame())) throw new Error(`waiting for ${what}; last frame:\n${lastFrame()}`);
        },
        { timeout: 10_000, interval: 10 },
      );
      await settle();
      return lastFrame();
    },
    async press(key) {
      await settle();
      stdin.write(key);
      await settle();
    },
  };
}

/** Every line of a frame fits the width (wide glyphs count as one: the table uses none). */
export function linesFit(frame: string, columns: number): string[] {
  return frame.split('\n').filter((line) => [...line].length > columns);
}
