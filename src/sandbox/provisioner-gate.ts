/**
 * A hold on the drill's in-process provisioner. The drill shows `mesh status` while a pair is
 * `pending` (committed on the provider, not applied yet); a watch loop polling every 200 ms
 * would make that reading a race, so the drill holds the loop for the reading and releases it.
 */
export class ProvisionerGate {
  private holds = 0;
  private waiters: (() => void)[] = [];
  private current: Promise<unknown> = Promise.resolve();

  /** Runs one cycle once no hold is taken; `signal` ends the wait (teardown never hangs on a hold). */
  async cycle<T>(run: () => Promise<T>, signal: AbortSignal): Promise<T> {
    while (this.holds > 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    const cycle = run();
    this.current = cycle.catch(() => undefined);
    return cycle;
  }

  /**
   * Stops new cycles and waits for the running one to end, so nothing is applied until the
   * returned release is called (calling it twice is harmless).
   */
  async hold(): Promise<() => void> {
    this.holds += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.holds -= 1;
      if (this.holds === 0) for (const wake of this.waiters.splice(0)) wake();
    };
    await this.current;
    return release;
  }
}
