/**
 * Order statistics over repeated samples. Medians, not means: on a shared 2-core machine one
 * run that lands beside a compiler or a garbage collection would drag a mean with it.
 */
export interface Summary {
  readonly n: number;
  readonly median: number;
  readonly p10: number;
  readonly p90: number;
  readonly min: number;
  readonly max: number;
}

/** The p-th percentile (0–100) by linear interpolation between the closest ranks. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function summarize(samples: readonly number[]): Summary {
  return {
    n: samples.length,
    median: median(samples),
    p10: percentile(samples, 10),
    p90: percentile(samples, 90),
    min: Math.min(...samples),
    max: Math.max(...samples),
  };
}
