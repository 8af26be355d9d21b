/**
 * The drill's line-by-line dialogue (TERM=dumb): `?` shows help and asks the same question
 * again — it ran the step before, as every answer but q did; q leaves, naming `--step N`.
 */
import { describe, expect, it } from 'vitest';
import { plainAnswers, plainHelp } from '../../src/commands/drill/plain-answers.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';

function scripted(answers: readonly (string | undefined)[]) {
  const asked: string[] = [];
  let next = 0;
  return {
    asked,
    ask: (question: string) => {
      asked.push(question);
      return Promise.resolve(answers[next++]);
    },
  };
}

describe('the plain dialogue answers', () => {
  const step = DRILL_STEPS[2]!;

  it('? shows the step help and asks the same question again; the step runs only on the next answer', async () => {
    const operator = scripted(['?', ' ? ', '']);
    const written: string[] = [];
    const answers = plainAnswers(
      operator.ask,
      (line) => written.push(line),
      () => plainHelp(step),
    );
    expect(await answers.ask('Press Enter to do it, q leaves the drill: ')).toBe('');
    expect(operator.asked).toEqual(Array(3).fill('Press Enter to do it, q leaves the drill: '));
    expect(written).toEqual([...plainHelp(step), ...plainHelp(step)]);
    expect(written[0]).toBe(`  Help, step ${step.number}: ${step.title}`);
    expect(written.join('\n')).toContain(`\`baton drill --step ${step.number}\` comes back to this step`);
    expect(answers.left()).toBe(false);
  });

  it('q or the end of input leaves, and every later question answers "leave" without asking', async () => {
    for (const leaving of ['q', undefined]) {
      const operator = scripted([leaving, 'never read']);
      const answers = plainAnswers(
        operator.ask,
        () => undefined,
        () => [],
      );
      expect(await answers.ask('Type 1: ')).toBeUndefined();
      expect(answers.left()).toBe(true);
      expect(await answers.ask('Type 1: ')).toBeUndefined();
      expect(operator.asked).toHaveLength(1);
    }
  });

  it('other answers pass through unchanged (a typed count, a fingerprint prefix)', async () => {
    const answers = plainAnswers(
      scripted(['3']).ask,
      () => undefined,
      () => [],
    );
    expect(await answers.ask('Type 3: ')).toBe('3');
  });
});
