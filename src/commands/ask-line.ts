import { createInterface } from 'node:readline';

/**
 * One answered line per question, for the plain dialogue. Cooked mode (no raw keys): the
 * terminal's own line editing applies, and nothing but the question is written.
 */
export function askLine(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): { question: (q: string) => Promise<string | undefined>; close: () => void } {
  const rl = createInterface({ input, terminal: false });
  const lines: string[] = [];
  const waiting: ((line: string | undefined) => void)[] = [];
  let ended = false;
  rl.on('line', (line) => {
    const next = waiting.shift();
    if (next) next(line);
    else lines.push(line);
  });
  rl.on('close', () => {
    ended = true;
    for (const next of waiting.splice(0)) next(undefined);
  });
  return {
    question: (q) => {
      output.write(q);
      if (lines.length > 0) return Promise.resolve(lines.shift());
      if (ended) return Promise.resolve(undefined);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => rl.close(),
  };
}
