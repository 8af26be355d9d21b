/**
 * Start-up and memory: `baton status --json` against a directory store holding a published
 * authority, as a cold process, against `node -e 0` — the floor no Node program starts under.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { publishAuthority } from '../lib/authority-fixture.js';
import { describeTrace, traceLoads } from '../lib/load-trace.js';
import { BIN, childEnv, type BenchCase } from '../lib/context.js';
import { figure, type Figure, type Skipped } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';
import { hasGnuTime, interleaved, type Run } from '../lib/timed-process.js';

export const startupCase: BenchCase = {
  name: 'startup',
  async run(ctx) {
    // The host's own cache of proved pairs (src/pki/checked-pairs.ts), filled by the sync that
    // published, as on an operator's host: the runs measured are a monitor's, every minute.
    const cache = { XDG_CACHE_HOME: ctx.tempDir('startup-cache') };
    const published = await publishAuthority(ctx, undefined, cache);
    const runs = Math.max(10, ctx.runs);
    ctx.log(`start-up: ${runs} interleaved runs of status --json and node -e 0`);
    const env = childEnv(cache);
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
    const crypto = await cryptoModules(
      ctx.tempDir('startup-crypto'),
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
    figures.push(
      figure({
        id: 'startup.status-json.crypto-modules',
        title: 'Start-up: crypto modules status --json loads (process.moduleLoadList)',
        measured: { label: 'baton status --json', value: crypto.length, unit: 'modules' },
        goal: { kind: 'absolute', max: 0, unit: 'modules' },
        notes: [
          crypto.length === 0
            ? 'none: no node:crypto, no OpenSSL binding (its pair was proved by the sync, src/pki/checked-pairs.ts)'
            : `loaded: ${crypto.join(', ')}`,
        ],
      }),
    );
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

/** The modules whose name says crypto that one run of `args` loaded, read from process.moduleLoadList at its exit. */
async function cryptoModules(
  dir: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<string[]> {
  const hook = path.join(dir, 'crypto-at-exit.cjs');
  writeFileSync(
    hook,
    "process.on('exit', () => process.stderr.write(`\\nBATON_BENCH_CRYPTO ${JSON.stringify(process.moduleLoadList.filter((m) => /crypto/i.test(m)))}\\n`));\n",
  );
  const { stderr } = await promisify(execFile)(process.execPath, ['--require', hook, ...args], { env, cwd });
  const listed = /BATON_BENCH_CRYPTO (\[.*\])/.exec(stderr)?.[1];
  if (listed === undefined) throw new Error(`status --json printed no module list: ${stderr}`);
  return JSON.parse(listed) as string[];
}

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
