/**
 * The stream Ink draws on, made safe for the terminals operators actually have (docs/cli.md, "Terminals"):
 *
 * - A terminal that reports 0×0 (`script`, some serial consoles) is laid out at 80×24.
 * - Ink is told the terminal is very tall, so it NEVER takes its full-clear path
 *   (ESC[2J ESC[3J ESC[H): that flickers over SSH and wipes the scrollback, the operator's
 *   incident log. The views keep every frame within the real rows themselves (Frame).
 * - On a resize the terminal re-flows the last frame's lines before Ink redraws; Ink then
 *   erases as many rows as it wrote, not as many as they now take, and copies of the header
 *   stack up (tmux even pulls scrolled-off copies back when the window grows). The screen is
 *   scrolled into the scrollback first, so the redraw starts clean.
 */
import { EventEmitter } from 'node:events';

const FALLBACK = { columns: 80, rows: 24 } as const;
/** What Ink is told: taller than any frame, so its full-clear path is unreachable. */
const INK_ROWS = 10_000;
const SIZE = Symbol('baton.terminalSize');
const ERASE = Symbol('baton.eraseFrame');

export interface TerminalSize {
  readonly columns: number;
  readonly rows: number;
}

interface Sized {
  readonly [SIZE]?: () => TerminalSize;
  readonly [ERASE]?: () => void;
  readonly columns?: number;
  readonly rows?: number;
}

/** The real size of the terminal behind `stdout` (wrapped or not), 80×24 when it reports none. */
export function terminalSize(stdout: unknown): TerminalSize {
  const sized = stdout as Sized;
  if (sized[SIZE]) return sized[SIZE]();
  return { columns: sized.columns || FALLBACK.columns, rows: sized.rows || FALLBACK.rows };
}

/**
 * Moves everything on the screen into the scrollback (newlines at the bottom row scroll it up,
 * on every terminal) and puts the cursor home. Nothing is erased: the operator's earlier
 * lines stay in the scrollback, and the next frame is drawn on a clean screen.
 */
const ESCAPE = /\u001b\[[0-9;?]*[A-Za-z]/g;
/** The end of log-update's eraseLines(n): the cursor back to column 1. */
const ERASE_END = '\u001b[G';

function scrollAway(rows: number): string {
  return `\u001b[${rows};1H${'\n'.repeat(rows)}\u001b[H`;
}

/**
 * Erases the last frame a finished Ink render left on the screen, so the next render (the
 * drill mounts one per view) draws in its place: each one's last frame otherwise stayed
 * above the next and piled up in the scrollback.
 */
export function eraseLastFrame(stdout: unknown): void {
  (stdout as Sized)[ERASE]?.();
}

/** log-update's eraseLines(n): each line cleared from the bottom up, the cursor left at column 1. */
function eraseLines(count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) out += `\u001b[2K${i < count - 1 ? '\u001b[1A' : ''}`;
  return count > 0 ? `${out}\u001b[G` : '';
}

export function fitTerminal(stdout: NodeJS.WriteStream): NodeJS.WriteStream {
  if ((stdout as Sized)[SIZE]) return stdout;
  const resize = new EventEmitter();
  const size = (): TerminalSize => ({
    columns: stdout.columns || FALLBACK.columns,
    rows: stdout.rows || FALLBACK.rows,
  });

  // Before Ink hears of the resize: the re-flowed old frame (part of it already pushed into
  // the scrollback, and pulled back when the window grows) goes up and out of view, so Ink's
  // erase-and-redraw starts from a clean screen and exactly one frame shows.
  /** The frame on screen as Ink last wrote it (after log-update's erase), to draw again if Ink does not. */
  let frame = '';
  let drawn = true;
  /**
   * Until then, a frame is drawn from the top of a cleared screen rather than over the rows
   * Ink thinks the last one took: right after a resize Ink draws once with the old layout
   * (lines now wider than the terminal, each taking two rows) before the view re-lays itself
   * out, and erasing that frame's line count left its top half — a second header — above.
   */
  let settleUntil = 0;
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
    const erased = text.lastIndexOf(ERASE_END);
    const body = erased >= 0 ? text.slice(erased + ERASE_END.length) : text;
    if (body.replace(ESCAPE, '') !== '') {
      frame = body;
      drawn = true;
      // Cursor home and erase below (never the full clear, which wipes the scrollback).
      if (Date.now() < settleUntil)
        return (stdout.write as (...args: unknown[]) => boolean)(`\u001b[H\u001b[J${body}`, ...rest);
    }
    return (stdout.write as (...args: unknown[]) => boolean)(chunk, ...rest);
  };

  const erase = () => {
    if (!frame) return;
    // Ink leaves the cursor on the line under its frame: up one line per frame line, clearing each.
    const lines = frame.split('\n').length - (frame.endsWith('\n') ? 1 : 0);
    stdout.write(`\u001b[2K\u001b[1A${eraseLines(lines)}`);
    frame = '';
  };

  stdout.on('resize', () => {
    stdout.write(scrollAway(size().rows));
    settleUntil = Date.now() + 300;
    drawn = false;
    // The views' own size hooks first, Ink's redraw last: Ink re-renders as soon as it hears,
    // and heard first it drew one frame in the old layout before the view had re-laid itself out.
    for (const listener of resize.listeners('resize').reverse()) (listener as () => void)();
    // Ink writes only a frame that differs from its last one; an unchanged frame (the width
    // grew, the text did not) is drawn again here so the screen is never left empty.
    setTimeout(() => {
      if (!drawn && frame) stdout.write(frame);
      drawn = true;
    }, 100);
  });

  return new Proxy(stdout, {
    get(target, property) {
      if (property === SIZE) return size;
      if (property === ERASE) return erase;
      if (property === 'columns') return size().columns;
      if (property === 'rows') return INK_ROWS;
      if (property === 'write') return write;
      if (
        property === 'on' ||
        property === 'addListener' ||
        property === 'off' ||
        property === 'removeListener' ||
        property === 'once'
      ) {
        const own = Reflect.get(target, property, target) as (...args: unknown[]) => unknown;
        return (event: string | symbol, listener: (...args: unknown[]) => void) => {
          if (event === 'resize') {
            (resize as unknown as Record<string, (...a: unknown[]) => unknown>)[property]!(event, listener);
            return target;
          }
          return own.call(target, event, listener);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
