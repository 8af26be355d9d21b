import type { ComponentType } from 'react';
import type { CliContext } from './context.js';

export interface MountViewOptions {
  readonly noColor: boolean;
  /** The exit code when the view ended without reporting one (Ctrl-C before it decided). */
  readonly ifInterrupted: number;
}

/**
 * Mounts a command's Ink view (`status`, `failover`) under the colour setting and resolves
 * with the exit code the view reported through `onExit`. Chalk decides its colour level when
 * it is first loaded, so FORCE_COLOR is set BEFORE Ink and the view are imported: otherwise
 * NO_COLOR / TERM=dumb / --no-color would still leave colour escapes on the screen.
 */
export async function mountView<P extends object>(
  ctx: CliContext,
  options: MountViewOptions,
  load: () => Promise<ComponentType<P>>,
  props: (onExit: (code: number) => void) => P,
): Promise<number> {
  if (options.noColor) process.env.FORCE_COLOR = '0';
  // React is CommonJS: once bundled, a dynamic import has it only as `default`.
  const [{ render }, { default: React }, { ColorContext }, { fitTerminal }, View] = await Promise.all([
    import('ink'),
    import('react'),
    import('../../components/color-context.js'),
    import('../../components/terminal-stream.js'),
    load(),
  ]);
  let code: number | undefined;
  const app = render(
    React.createElement(
      ColorContext.Provider,
      { value: !options.noColor },
      React.createElement(
        View,
        props((exit) => {
          code = exit;
        }),
      ),
    ),
    { stdout: fitTerminal(ctx.stdout), stderr: ctx.stderr, exitOnCtrlC: true, patchConsole: false },
  );
  await app.waitUntilExit();
  return code ?? options.ifInterrupted;
}
