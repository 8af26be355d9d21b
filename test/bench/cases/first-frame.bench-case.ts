/**
 * Time to first frame of the TTY status view in a real terminal: a private tmux server, 80×24,
 * from `new-session` until `capture-pane` shows the local fingerprint — against the same for a
 * `node -e` that prints a marker. Both sides pay tmux's start and the polling, so the ratio is
 * what the view adds to a bare Node start.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { publishAuthority } from '../lib/authority-fixture.js';
import { describeTrace, REGISTER, traceFromLog } from '../lib/load-trace.js';
import { BIN, childEnv, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const run = promisify(execFile);
const MARKER = 'baton-bench-first-frame';

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Milliseconds from new-session until the pane shows `expect`; the server is killed after. */
async function timeToText(
  command: string,
  expect: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  timeoutMs = 30_000,
): Promise<number> {
  const socket = `baton-bench-${process.pid}-${randomBytes(4).toString('hex')}`;
  // CI=true makes Ink draw only the final frame at exit; the pane is kept after the command.
  const inner = `env -u CI -u CONTINUOUS_INTEGRATION ${command}; exec sleep 600`;
  const started = process.hrtime.bigint();
  try {
    await run(
      'tmux',
      [
        '-L',
        socket,
        '-f',
        '/dev/null',
        'new-session',
        '-d',
        '-x',
        '80',
        '-y',
        '24',
        '-c',
        cwd,
        `sh -c ${shellQuote(inner)}`,
      ],
      { env },
    );
    for (;;) {
      const { stdout } = await run('tmux', ['-L', socket, 'capture-pane', '-p', '-t', '0'], { env });
      if (stdout.includes(expect)) return Number(process.hrtime.bigint() - started) / 1e6;
      if (Number(process.hrtime.bigint() - started) / 1e6 > timeoutMs)
        throw new Error(`the pane never showed ${expect}; last screen:\n${stdout}`);
    }
  } finally {
    await run('tmux', ['-L', socket, 'kill-server'], { env }).catch(() => undefined);
  }
}

export const firstFrameCase: BenchCase = {
  name: 'first-frame',
  async run(ctx) {
    if (spawnSync('tmux', ['-V']).status !== 0) {
      return {
        figures: [],
        skipped: [
          {
            id: 'first-frame.status',
            title: 'Time to first frame',
            reason: 'tmux is not installed (apt-get install tmux)',
          },
        ],
      };
    }
    const published = await publishAuthority(ctx, undefined);
    const env = childEnv({ TERM: 'xterm-256color' });
    const baton = [process.execPath, BIN, ...published.flags, 'status'].map(shellQuote).join(' ');
    const floor = [process.execPath, '-e', `console.log(${JSON.stringify(MARKER)})`]
      .map(shellQuote)
      .join(' ');
    const runs = Math.max(5, Math.ceil(ctx.runs / 2));
    ctx.log(`first frame: ${runs} interleaved tmux sessions each`);
    // One unrecorded round of each: the first tmux server start on a machine pays for loading tmux.
    await timeToText(baton, published.fingerprint, env, published.cwd);
    await timeToText(floor, MARKER, env, published.cwd);
    const subject: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        subject.push(await timeToText(baton, published.fingerprint, env, published.cwd));
        baseline.push(await timeToText(floor, MARKER, env, published.cwd));
      } else {
        baseline.push(await timeToText(floor, MARKER, env, published.cwd));
        subject.push(await timeToText(baton, published.fingerprint, env, published.cwd));
      }
    }
    // What the TTY path loads (the UI bundles and the view on top of the status read): once more,
    // with the load hook and stderr to a file (the pane is the terminal, so not a pipe).
    const loadLog = path.join(ctx.tempDir('first-frame-loads'), 'loads.log');
    const traced = [process.execPath, '--import', REGISTER, BIN, ...published.flags, 'status']
      .map(shellQuote)
      .join(' ');
    await timeToText(`${traced} 2>${shellQuote(loadLog)}`, published.fingerprint, env, published.cwd);
    const trace = traceFromLog(readFileSync(loadLog, 'utf8'));
    const s = summarize(subject);
    const b = summarize(baseline);
    return {
      figures: [
        figure({
          id: 'first-frame.status-tty',
          title: 'Time to first frame: TTY status view in tmux 80×24 (median)',
          measured: { label: 'baton status (TTY)', value: s.median, unit: 'ms', summary: s },
          baseline: { label: 'node -e console.log(marker)', value: b.median, unit: 'ms', summary: b },
          goal: { kind: 'ratio', max: 2 }, // the first-frame goal in docs/benchmarks.md
          notes: [
            `${runs} sessions each, interleaved; until capture-pane shows the local fingerprint / the marker`,
            `TTY path ${describeTrace(trace)}`,
          ],
        }),
      ],
      skipped: [],
    };
  },
};
