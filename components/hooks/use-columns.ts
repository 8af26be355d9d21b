import { createContext, useContext, useEffect, useState } from 'react';
import { useStdout } from 'ink';
import { terminalSize, type TerminalSize } from '../terminal-stream.js';

/**
 * Rows an enclosing frame keeps for itself (the drill's rail above a real view): the view
 * below gets the terminal's rows minus these, so the two together still fit.
 */
export const ReservedRows = createContext(0);

/**
 * The terminal's size, re-measured on every resize (SIGWINCH), so a view re-lays itself out
 * live; 80×24 when the terminal reports none. Only the top of a screen calls this and passes
 * `columns` and `rows` down.
 */
export function useTerminalSize(): TerminalSize {
  const { stdout } = useStdout();
  const reserved = useContext(ReservedRows);
  const [size, setSize] = useState(() => terminalSize(stdout));
  useEffect(() => {
    const onResize = () => setSize(terminalSize(stdout));
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);
  return { columns: size.columns, rows: Math.max(8, size.rows - reserved) };
}
