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
