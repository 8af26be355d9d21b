import { useEffect, useState } from 'react';
import { useStdout } from 'ink';

/**
 * The terminal width, read once and on resize. Views take `columns` as a prop; only the
 * top of a screen calls this. Non-TTY streams report no width: 80 is the design's minimum.
 */
export function useColumns(): number {
  const { stdout } = useStdout();
  const [columns, setColumns] = useState(stdout.columns || 80);
  useEffect(() => {
    const onResize = () => setColumns(stdout.columns || 80);
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);
  return columns;
}
