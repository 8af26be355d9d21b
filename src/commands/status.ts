import { setTimeout as sleep } from 'node:timers/promises';
import { jsonForTerminal } from '../outside-text.js';
import { BatonError, EXIT_OK } from '../errors.js';
import {
  requireDeployment,
  requireStore,
  stateDirFor,
  storeOptionsOf,
  type GlobalFlags,
} from '../config/config.js';
import { action, type Register } from './context.js';
import { printsJsonOnError } from './json-errors.js';
import { cursorAddressable } from './terminal-kind.js';
import type { StatusReport } from '../app/status-report.js';

interface StatusOptions {
  readonly json?: boolean;
  readonly watch?: boolean;
  readonly interval?: string;
}

const DEFAULT_WATCH_SECONDS = 5;

/**
 * `baton status [--json] [--watch]` (docs/cli.md): read-only — it never writes and never
 * takes the lock. Exit 0 in sync, 3 action needed, 1 could not read. Without a terminal (or
 * with --json) it prints plain text / one JSON object and never loads Ink, whose output still
 * carries escape sequences when piped.
 */
export const registerStatus: Register = (program, ctx) => {
  program
    .command('status')
    .description(
      'show the local and published authority side by side; changes nothing (exit 0 in sync, 3 action needed, 1 could not read)',
    )
    .option('--json', 'print one JSON object (see docs/status-json.md); with --watch, one line per read')
    .option('--watch', 'keep reading every few seconds (r reads now, q quits)')
    .option('--interval <seconds>', 'seconds between reads under --watch', String(DEFAULT_WATCH_SECONDS))
    .action(
      action(
        ctx,
        // A monitor parsing stdout sees why, not an empty read: one JSON object, the same exit code.
        printsJsonOnError(ctx, 'status', (options: StatusOptions) => status(options)),
      ),
    );

  /** NDJSON until Ctrl-C, SIGTERM or a reader that went away (`| head -1`); exit code of the last read. */
  async function watchJson(
    read: () => Promise<StatusReport>,
    json: (report: StatusReport) => unknown,
    intervalSeconds: number,
  ): Promise<number> {
    const { watchStatusJson } = await import('../app/status-watch-json.js');
    const stop = new AbortController();
    const abort = () => stop.abort();
    process.once('SIGINT', abort);
    process.once('SIGTERM', abort);
    ctx.stdout.once('error', abort);
    try {
      return await watchStatusJson({
        read,
        json,
        write: (line) => ctx.stdout.write(line),
        pause: () => sleep(intervalSeconds * 1000, undefined, { signal: stop.signal }).catch(() => undefined),
        signal: stop.signal,
      });
    } finally {
      process.off('SIGINT', abort);
      process.off('SIGTERM', abort);
      ctx.stdout.off('error', abort);
    }
  }

  async function status(options: StatusOptions): Promise<number> {
    const config = ctx.config();
    const deployment = requireDeployment(config);
    const stateDir = stateDirFor(config);
    const storeUrl = requireStore(config);
    const interval = Number(options.interval ?? DEFAULT_WATCH_SECONDS);
    if (!Number.isFinite(interval) || interval < 1 || interval > 3600) {
      throw new BatonError('usage', {
        what: `--interval "${options.interval}" is not a number of seconds between 1 and 3600.`,
        next: `Leave it out for ${DEFAULT_WATCH_SECONDS} s, or pass e.g. --interval 10.`,
      });
    }
    const { openStore, readStatus, statusExitCode, statusSources, batonInvocation, statusJson } =
      await import('./status-read.js');
    const baton = batonInvocation(program.opts<GlobalFlags>());
    // Printed next steps (JSON, plain) are run where `failover` may not be possible.
    const suggester = ctx.suggester();
    const store = await openStore(storeUrl, storeOptionsOf(config));
    const sources = statusSources({ deployment, stateDir, storeUrl, store, sealKeyFile: config.sealKeyFile });
    const read = () => readStatus(sources);

    if (options.json && options.watch)
      return watchJson(read, (report) => statusJson(report, suggester), interval);
    if (options.json) {
      const report = await read();
      ctx.stdout.write(`${jsonForTerminal(statusJson(report, suggester), 2)}\n`);
      return statusExitCode(report);
    }
    if (!cursorAddressable(ctx.stdout, ctx.env)) {
      if (options.watch)
        ctx.stderr.write(
          'baton: --watch needs a terminal that can redraw (not a pipe, not TERM=dumb); printing one read.\n',
        );
      const [{ statusText }, { MARKS }] = await Promise.all([
        import('../app/status-text.js'),
        import('../app/marks.js'),
      ]);
      const report = await read();
      ctx.stdout.write(
        statusText(
          report,
          { ok: MARKS.ok.glyph, action: MARKS.action.glyph, refused: MARKS.refused.glyph },
          suggester,
        ),
      );
      return statusExitCode(report);
    }

    // The first read starts now, while Ink and the view load: its disk and store I/O
    // overlaps their parsing, so the first frame with both sides comes sooner.
    let early: ReturnType<typeof read> | undefined = read();
    early.catch(() => undefined); // the view handles it; this only keeps it from counting as unhandled meanwhile
    const readFirstEarly = () => {
      const report = early ?? read();
      early = undefined;
      return report;
    };
    // Ctrl-C under --watch: StatusApp reports the last read's code as it unmounts.
    const { mountView } = await import('./mount-view.js');
    return mountView(
      ctx,
      // The screen redraws once per read (and per key), never in bursts: the 30 fps cap would
      // only hold back the frame with the first read by up to 33 ms.
      { noColor: config.noColor, ifInterrupted: EXIT_OK, maxFps: 1000 },
      async () => (await import('../../components/StatusApp.js')).StatusApp,
      (onExit, interactive) => ({
        read: readFirstEarly,
        baton,
        watchSeconds: options.watch ? interval : undefined,
        interactive,
        onExit,
      }),
    );
  }
};
