/**
 * The sandbox's undo list. Whatever the drill starts (S3, PostgreSQL, the provisioner loop,
 * the temp dir) registers how to undo itself here, and the list runs once, last-in first-out,
 * on every way out: q, the end of the walk-through, a failure, Ctrl-C and SIGTERM. A drill
 * that leaves a PostgreSQL running or a temp dir full of keys behind is a drill people stop
 * running.
 */
import { rmSync } from 'node:fs';

export interface Teardown {
  /** Registers an async undo (stop a server) and a sync last resort for `process.exit`. */
  add(name: string, undo: () => Promise<void> | void, lastResort?: () => void): void;
  /** Runs every undo once, newest first; never rejects (a failed undo is reported, the rest still run). */
  run(): Promise<readonly string[]>;
  /** Removes the temp dir last (after the servers that write into it have stopped). */
  removeDir(dir: string): void;
}

export function makeTeardown(): Teardown {
  const undos: { name: string; undo: () => Promise<void> | void; lastResort: (() => void) | undefined }[] =
    [];
  let running: Promise<readonly string[]> | undefined;
  // The process can end without the async list having run (process.exit from elsewhere):
  // the sync last resorts still kill servers and remove the dir.
  const onExit = () => {
    for (const entry of [...undos].reverse()) {
      try {
        entry.lastResort?.();
      } catch {
        // Best effort: the process is ending.
      }
    }
  };
  process.on('exit', onExit);
  const teardown: Teardown = {
    add(name, undo, lastResort) {
      // Started after the teardown ran (Ctrl-C during start-up): undone at once, not leaked.
      if (running) {
        void Promise.resolve()
          .then(undo)
          .catch(() => lastResort?.());
        return;
      }
      undos.push({ name, undo, lastResort });
    },
    removeDir(dir) {
      teardown.add(
        `remove ${dir}`,
        () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 }),
        () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 }),
      );
    },
    run() {
      running ??= (async () => {
        const failures: string[] = [];
        while (undos.length > 0) {
          const entry = undos.pop()!;
          try {
            await entry.undo();
          } catch (error) {
            failures.push(`${entry.name}: ${error instanceof Error ? error.message : String(error)}`);
            try {
              entry.lastResort?.();
            } catch {
              // Reported above.
            }
          }
        }
        process.removeListener('exit', onExit);
        return failures;
      })();
      return running;
    },
  };
  return teardown;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const SIGNAL_NUMBERS: Record<(typeof SIGNALS)[number], number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

/**
 * Ctrl-C (outside raw mode), SIGTERM and a dropped SSH session (SIGHUP) tear the sandbox down
 * before the process exits with 128+signal. The drill owns its process, so it takes these
 * signals over from anything registered before it: a library's own exit hook racing the
 * teardown could exit half-way through removing the temp dir.
 */
export function teardownOnSignals(teardown: Teardown, onSignal?: (signal: string) => void): () => void {
  const handlers = SIGNALS.map((signal) => {
    const handler = () => {
      onSignal?.(signal);
      void teardown.run().finally(() => process.exit(128 + SIGNAL_NUMBERS[signal]));
    };
    process.removeAllListeners(signal);
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.removeListener(signal, handler);
  };
}
