/**
 * Runs `fn` over `items` with at most `limit` in flight: a rotation over hundreds of holders
 * must not open hundreds of ssh connections at once (the controller runs out of processes,
 * the holders' sshd MaxStartups drops the excess and they look "unresolved").
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
