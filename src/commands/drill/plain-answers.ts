/**
 * The answers of the drill's line-by-line dialogue (TERM=dumb), before any task sees them: `?`
 * shows the help and asks the same question again (it ran the step: any answer but q went on),
 * and `q` or the end of input leaves — after which every later question answers "leave" too,
 * so an open dialogue backs out (nothing written) instead of asking again.
 */
import { nextStep, renderStep } from '../../next-step.js';
import { PLAIN_SUGGESTER } from '../../suggest-command.js';
import type { Ask } from './perform.js';

/** The command that comes back to a step of the drill (data, rendered once: src/next-step.ts). */
export function comeBack(step: number): string {
  return renderStep(PLAIN_SUGGESTER, nextStep(`drill --step ${step}`));
}

export interface PlainAnswers {
  readonly ask: Ask;
  /** Whether the operator left (q or end of input). */
  left(): boolean;
}

export function plainAnswers(
  ask: Ask,
  write: (line: string) => void,
  help: () => readonly string[],
): PlainAnswers {
  let left = false;
  return {
    left: () => left,
    ask: async (question) => {
      while (!left) {
        const answer = await ask(question);
        if (answer === undefined || answer.trim() === 'q') left = true;
        else if (answer.trim() === '?') for (const line of help()) write(line);
        else return answer;
      }
      return undefined;
    },
  };
}

/** The dialogue's help for a step: what it rehearses, and its keys. */
export function plainHelp(step: {
  readonly number: number;
  readonly title: string;
  readonly explanation: string;
}): string[] {
  return [
    `  Help, step ${step.number}: ${step.title}`,
    `  ${step.explanation}`,
    '  Enter  perform the task / go on',
    '  ?      this help',
    `  q      leave the drill; the sandbox is removed (\`${comeBack(step.number)}\` comes back to this step)`,
  ];
}
