import { BatonError, EXIT_OK } from '../errors.js';
import { nextStep } from '../next-step.js';
import { action, type Register } from './context.js';
import { cursorAddressable } from './terminal-kind.js';

interface DrillOptions {
  readonly list?: boolean;
  readonly step?: string;
  readonly plain?: boolean;
  readonly keep?: boolean;
}

/**
 * `baton drill` (also `npm start`): a guided rehearsal in a throw-away sandbox — S3, two
 * controllers, a PostgreSQL and a small mesh — on the real code paths. It needs no AWS account
 * and no database: everything runs on 127.0.0.1 and is removed on exit unless --keep.
 */
export const registerDrill: Register = (program, ctx) => {
  program
    .command('drill')
    .description('guided rehearsal of a failover and a credential rotation in a sandbox (also `npm start`)')
    .option('--list', 'print the steps, one line each')
    .option('--step <n>', 'set the sandbox up to just before step N and practise that step')
    .option(
      '--plain',
      'no screen: perform every step with scripted answers, print each check (exit 0 only if all pass)',
    )
    .option('--keep', 'keep the sandbox directory after the drill (its path is printed)')
    .addHelpText(
      'after',
      '\nExits: 0 after the whole walk; 1 when the sandbox could not start or (--plain) a check failed;\n' +
        "3 when left part-way: q on the drill's own screen or in the line-by-line drill, Ctrl-C, or the end\n" +
        'of input. Every way out stops the servers and removes the sandbox (unless --keep).',
    )
    .action(
      action(ctx, async (options: DrillOptions) => {
        const { listSteps, isStepNumber, DRILL_STEPS } = await import('../app/drill/scenario.js');
        if (options.list) {
          for (const line of listSteps()) ctx.stdout.write(`${line}\n`);
          return EXIT_OK;
        }
        const first = options.step === undefined ? 1 : Number(options.step);
        if (!Number.isInteger(first) || !isStepNumber(first)) {
          throw new BatonError('usage', {
            what: `--step "${options.step}" is not a step of the drill.`,
            next: [
              `Pass a number from 1 to ${DRILL_STEPS.length}; `,
              nextStep('drill --list'),
              ' shows them.',
            ],
            changed: 'Nothing was started.',
          });
        }
        // An install without the optional parts says what is missing before anything starts.
        const { assertDrillParts } = await import('../sandbox/drill-parts.js');
        assertDrillParts();
        // `--step N` practises that one step; without it, the whole drill.
        const last = options.step === undefined ? DRILL_STEPS[DRILL_STEPS.length - 1]!.number : first;
        const { hasTerminal } = await import('./mount-view.js');
        const interactive = !options.plain && hasTerminal(ctx) && cursorAddressable(ctx.stdout, ctx.env);
        if (!interactive) {
          const { runPlainDrill } = await import('./drill/plain.js');
          const write = (line: string) => ctx.stdout.write(`${line}\n`);
          if (!options.plain && hasTerminal(ctx)) {
            // TERM=dumb, unset, or a 0×0 pty: an operator is there but Ink cannot redraw, so the
            // same steps and gates run as a line-by-line dialogue (no escape codes).
            const [{ askLine }, { wrapPlainLine }] = await Promise.all([
              import('./ask-line.js'),
              import('../../components/layout.js'),
            ]);
            const ask = askLine(process.stdin, ctx.stdout);
            // Laid out to the terminal's width here: its own wrap broke words mid-way.
            const columns = ctx.stdout.columns || 0;
            const wrapped = (line: string) => {
              for (const part of wrapPlainLine(line, columns)) write(part);
            };
            // A question as long as the line wraps too; the answer is typed after its last line.
            const question = (text: string) => {
              const lines = wrapPlainLine(text.trimEnd(), columns);
              for (const line of lines.slice(0, -1)) write(line);
              return ask.question(`${lines[lines.length - 1]} `);
            };
            try {
              return await runPlainDrill({
                first,
                last,
                keep: Boolean(options.keep),
                write: wrapped,
                ask: question,
              });
            } finally {
              ask.close();
            }
          }
          if (!options.plain)
            ctx.stdout.write('baton drill: no terminal here, so running the plain walk-through (--plain).\n');
          return runPlainDrill({ first, last, keep: Boolean(options.keep), write });
        }
        const { runInteractiveDrill } = await import('./drill/interactive.js');
        return runInteractiveDrill({
          first,
          last,
          keep: Boolean(options.keep),
          noColor: ctx.config().noColor,
          stdout: ctx.stdout,
          stderr: ctx.stderr,
        });
      }),
    );
};
