/**
 * The stream Ink draws on, made safe for the terminals operators actually have (issue 15):
 *
 * - A terminal that reports 0×0 (`script`, some serial consoles) is laid out at 80×24.
 * - Ink is told the terminal is very tall, so it NEVER takes its full-clear path
 *   (ESC[2J ESC[3J ESC[H): that flickers over SSH and wipes the scrollback, the operator's
 *   incident log. The views keep every frame within the real rows themselves (Frame).
 * - On a resize the terminal re-flows the last frame's lines before Ink redraws; Ink then
 *   erases as many rows as it wrote, not as many as they now take, and copies of the header
 *   stack up. The rows the re-flow added are erased first.
 */
import { EventEmitter } from 'node:events';

const FALLBACK = { columns: 80, rows: 24 } as const;
/** What Ink is told: taller than any frame, so its full-clear path is unreachable. */
const INK_ROWS = 10_000;
const SIZE = Symbol('baton.terminalSize');

export interface TerminalSize {
  readonly columns: number;
  readonly rows: number;
}

interface Sized {
  readonly [SIZE]?: () => TerminalSize;
  readonly columns?: number;
  readonly rows?: number;
}

/** The real size of the terminal behind `stdout` (wrapped or not), 80×24 when it reports none. */
export function terminalSize(stdout: unknown): TerminalSize {
  const sized = stdout as Sized;
  if (sized[SIZE]) return sized[SIZE]();
  return { columns: sized.columns || FALLBACK.columns, rows: sized.rows || FALLBACK.rows };
}

const ESCAPE = /\u001b\[[0-9;?]*[A-Za-z]|\u001b[78]/g;
/** The end of log-update's eraseLines(n): the cursor back to column 1. */
const ERASE_END = '\u001b[G';
const CURSOR_SHOWN = '\u001b[?25h';

/** Rows `lines` take once the terminal re-flows them to `columns`. */
export function reflowedRows(lines: readonly string[], columns: number): number {
  return lines.reduce((sum, line) => sum + Math.max(1, Math.ceil([...line.replace(ESCAPE, '')].length / Math.max(1, columns))), 0);
}

function eraseLines(count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) out += `\u001b[2K${i < count - 1 ? '\u001b[1A' : ''}`;
  return count > 0 ? `${out}${ERASE_END}` : '';
}

export function fitTerminal(stdout: NodeJS.WriteStream): NodeJS.WriteStream {
  if ((stdout as Sized)[SIZE]) return stdout;
  const resize = new EventEmitter();
  /** The lines of the frame on screen: what was written since log-update's last erase. */
  let frame = '';
  let columns = terminalSize(stdout).columns;
  const size = (): TerminalSize => ({ columns: stdout.columns || FALLBACK.columns, rows: stdout.rows || FALLBACK.rows });

  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
    // A frame starts after log-update's erase, or after Ink showed the cursor again (an
    // unmounted view's last frame stays on screen; the next view draws below it).
    const after = (mark: string) => (text.includes(mark) ? text.lastIndexOf(mark) + mark.length : 0);
    const start = Math.max(after(ERASE_END), after(CURSOR_SHOWN));
    frame = start > 0 ? text.slice(start) : frame + text;
    return (stdout.write as (...args: unknown[]) => boolean)(chunk, ...rest);
  };

  stdout.on('resize', () => {
    const next = size().columns;
    if (next < columns) {
      const lines = frame.split('\n');
      // The line after the frame's last newline is where the cursor waits; it is not a row of the frame.
      const visible = frame.endsWith('\n') ? lines.slice(0, -1) : lines;
      const extra = reflowedRows(visible, next) - visible.length;
      // Ink erases the rows it wrote; these are the rows the re-flow added above its count.
      if (extra > 0) stdout.write(eraseLines(extra + 1));
    }
    columns = next;
    resize.emit('resize');
  });

  return new Proxy(stdout, {
    get(target, property) {
      if (property === SIZE) return size;
      if (property === 'columns') return size().columns;
      if (property === 'rows') return INK_ROWS;
      if (property === 'write') return write;
      if (property === 'on' || property === 'addListener' || property === 'off' || property === 'removeListener' || property === 'once') {
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
