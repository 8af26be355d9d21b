/**
 * The typed confirmations of the plain commands (sync, ca init, ca retire): the operator types
 * a few characters they can only know by reading what is about to be minted, moved or
 * replaced. Without a terminal, minting needs --yes and every bound step its `--confirm VALUE`
 * (src/share/confirm-binding.ts). End of input or Ctrl-C is a "no".
 */
import { renderStep, type NextStep } from '../next-step.js';
import { BatonError } from '../errors.js';
import type { Binding } from '../share/confirm-binding.js';
import type { CliContext } from './context.js';

export function stdinIsTerminal(): boolean {
  return process.stdin.isTTY === true;
}

/** The typed answer, or undefined for Ctrl-C / end of input. */
export async function askTyped(output: NodeJS.WritableStream, question: string): Promise<string | undefined> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  // Ctrl-C or end of input is a "no": without these the question would hang, or the process
  // would drain and exit 0 as if the action had been confirmed.
  const typed = await new Promise<string | undefined>((resolve) => {
    rl.once('SIGINT', () => resolve(undefined));
    rl.once('close', () => resolve(undefined));
    rl.question(question).then(resolve, () => resolve(undefined));
  });
  rl.close();
  return typed;
}

export async function ask(ctx: CliContext, prompt: string): Promise<string | undefined> {
  const typed = await askTyped(ctx.stdout, prompt);
  if (typed === undefined) ctx.stdout.write('\n');
  return typed;
}

/**
 * The bound steps: `--confirm` values given are checked exactly (exit 2 naming what was
 * expected and where to read it). None given: on a terminal each value is asked for typed
 * (a wrong one is exit 4, nothing sent); without one, exit 2.
 */
export async function confirmBound(
  ctx: CliContext,
  bindings: readonly Binding[],
  given: readonly string[],
  where: string,
  explain: readonly string[],
): Promise<void> {
  const { checkConfirmations } = await import('../share/confirm-binding.js');
  if (given.length > 0 || bindings.length === 0 || !stdinIsTerminal()) {
    try {
      checkConfirmations(bindings, given, where);
    } catch (error) {
      // The refusal also says what is at stake, so the value is read knowing what it does.
      if (!(error instanceof BatonError) || explain.length === 0) throw error;
      throw new BatonError(error.code, {
        what: `${error.what} ${explain.join(' ')}`,
        where,
        changed: error.changed,
        next: error.said ?? error.next,
      });
    }
    return;
  }
  for (const line of explain) ctx.stdout.write(`${line}\n`);
  for (const binding of bindings) {
    const typed = await ask(ctx, binding.prompt);
    if (typed === undefined || typed.trim() !== binding.expected) {
      const [{ typedMatch }, { wrongCase }] = await Promise.all([
        import('../pki/fingerprint-type.js'),
        import('../app/typed-gate.js'),
      ]);
      const caseOnly = typed !== undefined && typedMatch(typed, binding.expected) === 'wrong-case';
      throw new BatonError('aborted', {
        what:
          typed === undefined
            ? 'The confirmation was not given (Ctrl-C or end of input).'
            : caseOnly
              ? wrongCase(typed, binding.describe)
              : `The typed characters do not match: expected ${binding.describe}.`,
        where,
        changed: 'Nothing was written.',
        next: `Read ${binding.placeholder.readFrom}, then run the command again.`,
      });
    }
  }
}

/**
 * Minting a first authority is said, never inferred: on a terminal the first characters of
 * the deployment id are typed (as the console asks); without one, --yes is required.
 */
export async function confirmMint(
  ctx: CliContext,
  options: {
    readonly deployment: string;
    readonly location: string;
    readonly yes: boolean;
    readonly command: NextStep;
    readonly note?: string;
  },
): Promise<void> {
  const command = `\`${renderStep(ctx.suggester(), options.command)}\``;
  const { deploymentPrefix, deploymentRefusal, mintGateQuestion } = await import('../app/typed-gate.js');
  const prefix = deploymentPrefix(options.deployment);
  if (!stdinIsTerminal()) {
    if (options.yes) return;
    throw new BatonError('usage', {
      what: `Nothing is published at ${options.location}. ${command} mints a new authority for deployment ${options.deployment} and publishes it there; without a terminal that needs --yes.${options.note ?? ''}`,
      where: options.location,
      changed: 'Nothing was minted or written.',
      next: `Check that ${options.location} is the deployment's store (nothing is published there), then run the command again with --yes.`,
    });
  }
  // The gate names the store it publishes to and never the answer (typed-gate.ts).
  ctx.stdout.write(
    `Nothing is published at ${options.location}. This mints a NEW authority and publishes it to ${options.location}: every node must then trust it.${options.note ?? ''}\n`,
  );
  const typed = await ask(ctx, `${mintGateQuestion(prefix.length)} `);
  const refusal =
    typed === undefined
      ? 'The confirmation was not given (Ctrl-C or end of input).'
      : deploymentRefusal(typed, options.deployment);
  if (refusal) {
    throw new BatonError('aborted', {
      what: refusal,
      where: options.location,
      changed: 'Nothing was minted or written.',
      next: ['Run ', options.command, ' again when you are ready.'],
    });
  }
}
