/**
 * `baton drill --plain`: the whole scenario without a terminal, through the same code paths
 * as the interactive drill (src/commands/drill/perform.ts), with scripted answers. It prints what each
 * task did and every check's result, and exits 0 only if every check passed — this is the
 * drill CI runs, so a rehearsal that would teach a wrong lesson fails the build.
 */
import { shown } from '../../outside-text.js';
import { EXIT_CODES, EXIT_OK } from '../../errors.js';
import { DRILL_EXIT } from '../../app/drill/drill-flow.js';
import { NOT_ACCEPTED } from '../../app/typed-gate.js';
import { MARKS } from '../../app/marks.js';
import type { CheckResult } from '../../app/drill/check.js';
import { runChecks } from './checks.js';
import { formatDuration } from '../../app/drill/format-duration.js';
import { newNotebook, noteBefore } from './notebook.js';
import { performScripted, type Ask } from './perform.js';
import { seedPasswords } from './rotate.js';
import { startSandbox } from '../../sandbox/drill-sandbox.js';
import type { DrillSandbox } from '../../sandbox/drill-layout.js';
import { DRILL_STEPS, type StepNumber, type StepSpec } from '../../app/drill/scenario.js';
import { comeBack, plainAnswers, plainHelp } from './plain-answers.js';
import { makeTeardown, teardownOnSignals } from '../../sandbox/teardown.js';

/** A failure's message may quote a server's or the store's words: escaped, but kept whole (baton's own sentences run long). */
const FAILURE_SHOWN_MAX = 2_000;

export interface PlainOptions {
  readonly first: StepNumber;
  /** The last step performed: `--step N` practises that one step. */
  readonly last: StepNumber;
  readonly keep: boolean;
  readonly write: (line: string) => void;
  /**
   * The operator's answered lines (TERM=dumb, a 0×0 pty): each task is then performed by the
   * operator through the plain dialogues; undefined means q or end of input, which leaves.
   */
  readonly ask?: Ask;
}

export async function runPlainDrill(options: PlainOptions): Promise<number> {
  /** Entries a gate refused (a wrong count or prefix): listed in the summary, as the full-screen drill lists them. */
  const wrongTurns: string[] = [];
  const refused = `${MARKS.refused.glyph} ${NOT_ACCEPTED}`;
  const write = (line: string) => {
    const at = line.indexOf(refused);
    if (options.ask && at >= 0) wrongTurns.push(line.slice(at + refused.length));
    options.write(line);
  };
  const teardown = makeTeardown();
  const release = teardownOnSignals(teardown, (signal) =>
    write(`baton drill: ${signal}: removing the sandbox…`),
  );
  let sandbox: DrillSandbox | undefined;
  let failed = 0;
  let passed = 0;
  const times: string[] = [];
  // q or end of input anywhere leaves; ? shows the current step's help (src/commands/drill/plain-answers.ts).
  let current: StepSpec = DRILL_STEPS.find((s) => s.number === options.first)!;
  const answers = options.ask && plainAnswers(options.ask, write, () => plainHelp(current));
  const ask: Ask | undefined = answers?.ask;
  const isLeft = () => answers?.left() ?? false;
  try {
    write(
      ask
        ? 'baton drill (line by line): a rehearsal in a sandbox; each step is explained, you perform it by answering, then it is checked. ? shows help, q leaves.'
        : 'baton drill --plain: a rehearsal in a sandbox, every step performed and checked.',
    );
    ({ sandbox } = await startSandbox({
      keep: options.keep,
      teardown,
      seed: seedPasswords,
      onProgress: (text) => write(`  ${MARKS.busy.glyph} ${text}`),
    }));
    write(`  ${MARKS.ok.glyph} sandbox ready: ${sandbox.dir} (deployment ${sandbox.deployment})`);
    if (options.first > 1) {
      write(
        `Preparing the sandbox for step ${options.first} (performing steps 1–${options.first - 1} quietly)…`,
      );
      await prepareForStep(sandbox, options.first);
    }
    const notebook = newNotebook();
    for (const step of DRILL_STEPS.filter((s) => s.number >= options.first && s.number <= options.last)) {
      write('');
      current = step;
      write(`Step ${step.number} of ${DRILL_STEPS.length}: ${step.title}`);
      write(`  ${step.explanation}`);
      const started = Date.now();
      let stepOk = true;
      for (const task of step.tasks) {
        if (isLeft()) break;
        write(`  ▸ ${task.label}`);
        const before = await noteBefore(sandbox, notebook);
        try {
          await performScripted(sandbox, task, (line) => write(`    ${line}`), ask);
        } catch (error) {
          write(
            `    ${MARKS.refused.glyph} it failed: ${shown(error instanceof Error ? error.message.split('\n').join(' ') : String(error), FAILURE_SHOWN_MAX)}`,
          );
        }
        if (isLeft()) {
          write(
            `  you left the drill during step ${step.number}; \`${comeBack(step.number)}\` comes back to it.`,
          );
          break;
        }
        const results = await runChecks(sandbox, before, step.number, step.tasks.indexOf(task));
        for (const line of checkLines(results)) write(`    ${line}`);
        passed += results.filter((r) => r.ok).length;
        const bad = results.filter((r) => !r.ok).length;
        failed += bad;
        if (bad > 0) stepOk = false;
      }
      if (isLeft()) break;
      times.push(
        `  step ${step.number}  ${formatDuration(Date.now() - started).padStart(5)}  ${stepOk ? MARKS.ok.glyph : MARKS.refused.glyph} ${step.title}`,
      );
      // Later steps stand on this one: after a failed check their results would mislead.
      if (!stepOk) {
        write(`  ${MARKS.refused.glyph} step ${step.number} did not pass; the walk-through stops here.`);
        break;
      }
    }
  } catch (error) {
    failed += 1;
    write(
      `${MARKS.refused.glyph} ${(error instanceof Error ? error.message : String(error))
        .split('\n')
        .map((line) => shown(line, FAILURE_SHOWN_MAX))
        .join('\n  ')}`,
    );
  } finally {
    const problems = await teardown.run();
    release();
    write('');
    write('Summary');
    for (const line of times) write(line);
    write(`  checks: ${passed} passed, ${failed} failed`);
    if (options.ask) {
      write(
        wrongTurns.length === 0
          ? '  wrong turns: none'
          : `  wrong turns (${wrongTurns.length}), each refused with nothing written:`,
      );
      for (const turn of wrongTurns) write(`    ${MARKS.refused.glyph} ${turn}`);
    }
    for (const problem of problems) write(`  ${MARKS.action.glyph} cleaning up: ${problem}`);
    if (sandbox)
      write(
        options.keep
          ? `  the sandbox is kept in ${sandbox.dir}`
          : '  the sandbox was removed (servers stopped, temp dir deleted)',
      );
  }
  if (isLeft()) {
    write(`you left the drill; ${failed === 0 ? 'every check so far passed' : `${failed} check(s) failed`}`);
    // One rule for every way of leaving part-way (q here, q or Ctrl-C on the screen): exit 3.
    return DRILL_EXIT.left;
  }
  write(
    failed === 0
      ? `${MARKS.ok.glyph} every check passed`
      : `${MARKS.refused.glyph} ${failed} check(s) failed`,
  );
  return failed === 0 ? EXIT_OK : EXIT_CODES.failed;
}

export function checkLines(results: readonly CheckResult[]): string[] {
  return results.map(
    (r) => `${r.ok ? MARKS.ok.glyph : MARKS.refused.glyph} ${r.label}${r.detail ? ` — ${r.detail}` : ''}`,
  );
}

/**
 * `--step N`: the sandbox as it stands just before step N, reached by performing the earlier
 * steps by script AND checking them — a preparation that silently went wrong would make the
 * practised step teach the wrong thing.
 */
export async function prepareForStep(
  sandbox: DrillSandbox,
  first: StepNumber,
  signal?: AbortSignal,
): Promise<void> {
  const notebook = newNotebook();
  for (const step of DRILL_STEPS.filter((s) => s.number < first)) {
    for (const [index, task] of step.tasks.entries()) {
      if (signal?.aborted) throw new Error(`The drill was left while preparing step ${first}.`);
      const before = await noteBefore(sandbox, notebook);
      await performScripted(sandbox, task);
      const bad = (await runChecks(sandbox, before, step.number, index)).filter((r) => !r.ok);
      if (bad.length > 0) {
        throw new Error(
          `Preparing step ${first} failed at step ${step.number}: ${bad.map((r) => `${r.label} (${r.detail ?? ''})`).join('; ')}`,
        );
      }
    }
  }
}
