/**
 * Whether Ink may draw on this terminal (docs/cli.md, "Terminals" and "Screens and keys"). Ink redraws by moving the
 * cursor up and erasing lines; a terminal that cannot do that (TERM=dumb or unset, a serial
 * console) or that reports no size (0×0: `script`, some SSH clients) shows every redraw as
 * new garbage lines. Those get the plain renderer: text for status, a line-by-line dialogue
 * for the walk and for the drill.
 */
export function cursorAddressable(
  stdout: { readonly isTTY?: boolean; readonly columns?: number; readonly rows?: number },
  env: NodeJS.ProcessEnv,
): boolean {
  const term = (env.TERM ?? '').trim();
  return (
    Boolean(stdout.isTTY) && term !== '' && term !== 'dumb' && Boolean(stdout.columns) && Boolean(stdout.rows)
  );
}
