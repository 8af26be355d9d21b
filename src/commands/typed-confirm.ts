/**
 * A typed confirmation on a terminal: the operator types a few characters they can only know
 * by reading what is about to be deleted or moved. Ctrl-C and end of input are a "no" — without
 * that the question would hang, or the process would drain and exit 0 as if it had been done.
 */
import { createInterface } from 'node:readline/promises';

/** The typed answer, or undefined for Ctrl-C / end of input. */
export async function askTyped(output: NodeJS.WritableStream, question: string): Promise<string | undefined> {
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  const typed = await new Promise<string | undefined>((resolve) => {
    rl.once('SIGINT', () => resolve(undefined));
    rl.once('close', () => resolve(undefined));
    rl.question(question).then(resolve, () => resolve(undefined));
  });
  rl.close();
  return typed;
}
