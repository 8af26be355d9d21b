/**
 * Runs `fn` over `items` with at most `limit` in flight: a rotation over hundreds of holders
 * must not open hundreds of ssh connections at once (the controller runs out of processes,
 * the holders' sshd MaxStartups drops the excess and they look "unresolved").
 *
 * `limit` (`--concurrency`) is a ceiling, not a target: how many are in flight adapts to what
 * the controller keeps up with (adaptive-limit.ts) — halved when answers slow down or the event
 * loop lags, grown back by one per window of timely answers. An item is started only when a
 * place is free, so its transport's deadline never runs while it waits here.
 */
import { AdaptiveLimit } from './adaptive-limit.js';
import { placeTrace } from './place-trace.js';

export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number | AdaptiveLimit,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  if (items.length === 0) return results;
  const limiter = typeof limit === 'number' ? new AdaptiveLimit(limit) : limit;
  const trace = placeTrace();
  return new Promise<R[]>((resolve, reject) => {
    let next = 0;
    let inFlight = 0;
    let finished = 0;
    let failed = false;
    const pump = () => {
      while (!failed && next < items.length && inFlight < limiter.limit) {
        const index = next++;
        inFlight += 1;
        const sample = limiter.start();
        trace?.taken(limiter.limit);
        // fn is called synchronously here (as the old workers did), so an item starts in order.
        let running: Promise<R>;
        try {
          running = fn(items[index]!, index);
        } catch (error) {
          running = Promise.reject(error);
        }
        running.then(
          (value) => {
            results[index] = value;
            inFlight -= 1;
            finished += 1;
            trace?.given(limiter.limit);
            limiter.done(sample);
            if (finished === items.length) resolve(results);
            else pump();
          },
          (error: unknown) => {
            // As Promise.all over the old workers: the first failure rejects, nothing new starts.
            failed = true;
            inFlight -= 1;
            trace?.given(limiter.limit);
            reject(error);
          },
        );
      }
    };
    pump();
  });
}
