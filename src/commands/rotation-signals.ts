/**
 * A rotation's own signal handling. The first SIGINT, SIGTERM or SIGHUP stops it safely: a
 * commit not started does not start, past the commit the wait ends and every unfinished pair is
 * rolled back (or finished, where its receipt already shows the new password), and the summary
 * is still printed where anyone can read it.
 *
 * A later signal — a second Ctrl-C, the SIGHUP a dropped terminal sends after tmux's own, a
 * SIGTERM from a unit stopping — never ends baton: dying mid-roll-back is exactly what leaves a
 * provider on the new password and its consumer on the old one, with nobody left to run
 * `mesh resume`. Every step of the roll-back is bounded (`--timeout`, the short receipt look),
 * so baton ends on its own; only SIGKILL cuts it, which `mesh status` then names.
 */

/** The first signal's words, for the summary ("rolled back (interrupted by SIGHUP)"). */
export function signalReason(signal: NodeJS.Signals): string {
  return `interrupted by ${signal}`;
}

export function stopOnSignals(
  stop: AbortController,
  say: (line: string) => void,
  proc: Pick<NodeJS.Process, 'on' | 'off'> = process,
): () => void {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      stop.abort(new Error(signalReason(signal)));
      return;
    }
    say(
      `${signal} again: still taking back what did not finish; baton ends by itself once every pair is finished or rolled back (a kill now would leave it half-way).`,
    );
  };
  for (const signal of signals) proc.on(signal, onSignal);
  return () => {
    for (const signal of signals) proc.off(signal, onSignal);
  };
}

/**
 * `mesh resume` and `mesh rollback` under a signal: they are already the way out of an
 * unfinished rotation, and each step is bounded (`--wait`, `--timeout`), so no signal cuts them
 * — a Ctrl-C, a SIGHUP from a dropped terminal or a unit's SIGTERM is answered with a line and
 * the operation ends by itself. Left to the default (or to the transports' exit), a signal
 * would stop a roll-back between a provider's rename and its consumer's: the stranding these
 * commands exist to undo.
 */
export async function finishingThroughSignals<T>(
  command: string,
  say: (line: string) => void,
  run: () => Promise<T>,
  proc: Pick<NodeJS.Process, 'on' | 'off'> = process,
): Promise<T> {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const onSignal = (signal: NodeJS.Signals) =>
    say(
      `${signal}: ${command} goes on to the end (each step is bounded by --wait and --timeout); stopping it half-way would leave the pairs it is putting right half-way.`,
    );
  for (const signal of signals) proc.on(signal, onSignal);
  try {
    return await run();
  } finally {
    for (const signal of signals) proc.off(signal, onSignal);
  }
}
