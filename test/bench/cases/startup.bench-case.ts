/**
 * Start-up and memory: `baton status --json` against a directory store holding a published
 * authority, as a cold process, against `node -e 0` — the floor no Node program starts under.
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { publishAuthority } from '../lib/authority-fixture.js';
import { describeTrace, traceLoads } from '../lib/load-trace.js';
import { BIN, childEnv, type BenchCase } from '../lib/context.js';
import { figure, type Figure, type Skipped } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';
import { hasGnuTime, interleaved, type Run } from '../lib/timed-process.js';

export const startupCase: BenchCase = {
  name: 'startup',
  async run(ctx) {
    const published = await publishAuthority(ctx, undefined);
    const runs = Math.max(10, ctx.runs);
    ctx.log(`start-up: ${runs} interleaved runs of status --json and node -e 0`);
    const env = childEnv();
    const result = await interleaved(
      {
        file: process.execPath,
        args: [BIN, ...published.flags, 'status', '--json'],
        env,
        cwd: published.cwd,
      },
      { file: process.execPath, args: ['-e', '0'], env },
      {
        runs,
        check: (run) =>
          run.exitCode === 0 && run.stdout.includes(published.fingerprint)
            ? undefined
            : `exit ${run.exitCode}, fingerprint ${run.stdout.includes(published.fingerprint) ? 'shown' : 'missing'}`,
      },
    );
    const trace = await traceLoads(
      process.execPath,
      [BIN, ...published.flags, 'status', '--json'],
      env,
      published.cwd,
    );
    const wall = summarize(result.subject.map((r) => r.wallMs));
    const floor = summarize(result.baseline.map((r) => r.wallMs));
    const figures: Figure[] = [
      figure({
        id: 'startup.status-json.directory',
        title: 'Start-up: status --json, directory store (cold process, median)',
        measured: { label: 'baton status --json', value: wall.median, unit: 'ms', summary: wall },
        baseline: { label: 'node -e 0', value: floor.median, unit: 'ms', summary: floor },
        goal: { kind: 'ratio', max: 1.5 }, // the goal in docs/benchmarks.md (it was 2×)
        notes: [
          `${runs} runs each, interleaved`,
          `p90 ${wall.p90.toFixed(0)} ms vs ${floor.p90.toFixed(0)} ms`,
          describeTrace(trace),
        ],
      }),
    ];
    const skipped: Skipped[] = [];
    if (hasGnuTime()) {
      const rss = summarize(result.subject.map((r) => (r.maxRssKb ?? 0) / 1024));
      const rssFloor = summarize(result.baseline.map((r) => (r.maxRssKb ?? 0) / 1024));
      const cpu = summarize(result.subject.map((r) => r.cpuMs ?? 0));
      const cpuFloor = summarize(result.baseline.map((r) => r.cpuMs ?? 0));
      figures.push(
        peakRssFigure(rss, rssFloor, 'VmHWM as GNU time reports it (%M)'),
        figure({
          id: 'startup.status-json.cpu',
          title: 'Start-up CPU: status --json, user+sys (median)',
          measured: { label: 'baton status --json', value: cpu.median, unit: 'ms CPU', summary: cpu },
          baseline: { label: 'node -e 0', value: cpuFloor.median, unit: 'ms CPU', summary: cpuFloor },
          goal: { kind: 'none' },
          notes: ['GNU time, 10 ms resolution: less sensitive than wall time to other load on the machine'],
        }),
      );
    } else {
      ctx.log('memory: no GNU time; reading VmHWM through a preloaded hook');
      const hook = [
        '--import',
        pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), '../lib/vmhwm-hook.mjs')).href,
      ];
      const peak = (run: Run) => Number(/BATON_BENCH_VMHWM (\d+)/.exec(run.stderr)?.[1] ?? Number.NaN) / 1024;
      const hooked = await interleaved(
        {
          file: process.execPath,
          args: [...hook, BIN, ...published.flags, 'status', '--json'],
          env,
          cwd: published.cwd,
        },
        { file: process.execPath, args: [...hook, '-e', '0'], env },
        { runs: 5, warmup: 0 },
      );
      const rss = summarize(hooked.subject.map(peak));
      const rssFloor = summarize(hooked.baseline.map(peak));
      figures.push(
        peakRssFigure(
          rss,
          rssFloor,
          'VmHWM read by a preloaded exit hook (no GNU time on this machine); 5 runs each',
        ),
      );
    }
    return { figures, skipped };
  },
};

/** The memory figure, whichever way the peak was read (GNU time or the exit hook). */
function peakRssFigure(
  rss: ReturnType<typeof summarize>,
  rssFloor: ReturnType<typeof summarize>,
  how: string,
) {
  return figure({
    id: 'memory.status-json.peak-rss',
    title: 'Memory: peak RSS of status --json (median)',
    measured: { label: 'baton status --json', value: rss.median, unit: 'MB', summary: rss },
    baseline: { label: 'node -e 0', value: rssFloor.median, unit: 'MB', summary: rssFloor },
    goal: { kind: 'none' },
    notes: [how],
  });
}
