import type { Instance } from 'ink';
import type { ComponentType, ReactElement } from 'react';
import { holdBracketedPaste } from './bracketed-paste.js';

/**
 * The one place a command decides it has a terminal and mounts Ink: colour, the colour
 * context, raw keyboard input and the TTY checks live here, not in each command.
 */

/** Where a view draws. */
export interface ViewStreams {
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * A command may take keys only when both ends are a terminal: Ink puts stdin in raw mode for
 * its input hooks, which a pipe cannot do (Ink would throw), and a piped stdout gets plain lines.
 */
export function hasTerminal(streams: Pick<ViewStreams, 'stdout'>): boolean {
  // stdout first: reading process.stdin opens a stream on it (a socket for a pipe), which a
  // monitor's `status --json`, writing to a pipe or a file, never needs.
  return Boolean(streams.stdout.isTTY && process.stdin.isTTY);
}

export interface InkSession {
  /** Whether the mounted views may read keys (stdin is a terminal, so Ink can use raw mode). */
  readonly interactive: boolean;
  /**
   * Renders one element under the colour setting as its own Ink instance. Ctrl-C is the view's
   * to handle unless `exitOnCtrlC` (a view that must finish a phase before it may end).
   */
  mount(
    element: ReactElement,
    options?: { readonly exitOnCtrlC?: boolean; readonly maxFps?: number },
  ): Instance;
}

/**
 * Loads Ink under the colour setting. Chalk decides its colour level when it is first loaded,
 * so FORCE_COLOR is set BEFORE Ink or any view is imported: otherwise NO_COLOR / TERM=dumb /
 * --no-color would still leave colour escapes on the screen. Call it before importing a view.
 */
export async function openInk(streams: ViewStreams, noColor: boolean): Promise<InkSession> {
  if (noColor) process.env.FORCE_COLOR = '0';
  // React is CommonJS: once bundled, a dynamic import has it only as `default`.
  const [{ render }, { default: React }, { ColorContext }, { fitTerminal, eraseLastFrame }] =
    await Promise.all([
      import('ink'),
      import('react'),
      import('../../components/color-context.js'),
      import('../../components/terminal-stream.js'),
    ]);
  // Every view (and every view the drill mounts in turn) draws on one fitted stream: 0×0 laid
  // out as 80×24, Ink's full clear unreachable, a resize redrawn from a clean screen.
  const stdout = fitTerminal(streams.stdout);
  const interactive = Boolean(process.stdin.isTTY);
  // Asked once per process, undone on every way out: a view's typed field (the force gate, the
  // rotation count) must get a paste wrapped, or its line break presses Enter.
  if (interactive) holdBracketedPaste(streams.stdout);
  return {
    interactive,
    mount: (element, options = {}) => {
      // A render after another (the drill's views in turn) draws where the last one ended.
      eraseLastFrame(stdout);
      return render(React.createElement(ColorContext.Provider, { value: !noColor }, element), {
        stdout,
        stderr: streams.stderr,
        exitOnCtrlC: options.exitOnCtrlC ?? false,
        patchConsole: false,
        ...(options.maxFps === undefined ? {} : { maxFps: options.maxFps }),
      });
    },
  };
}

export interface MountViewOptions {
  readonly noColor: boolean;
  /** The exit code when the view ended without reporting one (Ctrl-C before it decided). */
  readonly ifInterrupted: number;
  /**
   * Ink's frame rate cap (default 30). A view that redraws only when a read lands may lift it:
   * the cap holds back the frame right after the first one, i.e. the one showing the read.
   */
  readonly maxFps?: number;
}

/**
 * Mounts a command's Ink view (`status`, `failover`) and resolves with the exit code the view
 * reported through `onExit`.
 */
export async function mountView<P extends object>(
  ctx: ViewStreams,
  options: MountViewOptions,
  load: () => Promise<ComponentType<P>>,
  props: (onExit: (code: number) => void, interactive: boolean) => P,
): Promise<number> {
  const ink = await openInk(ctx, options.noColor);
  const [{ default: React }, View] = await Promise.all([import('react'), load()]);
  let code: number | undefined;
  const app = ink.mount(
    React.createElement(
      View,
      props((exit) => {
        code = exit;
      }, ink.interactive),
    ),
    { exitOnCtrlC: true, maxFps: options.maxFps },
  );
  await app.waitUntilExit();
  return code ?? options.ifInterrupted;
}
