/**
 * One benchmark figure: what was measured, the baseline measured in the same run, their
 * ratio and the goal. A figure is a report, never an assertion — a slow machine makes the
 * numbers bigger, not the build red — so a missed goal is printed and recorded, and the run
 * still exits 0.
 */
import type { Summary } from './stats.js';

export type Unit =
  | 'ms'
  | 'MB'
  | 'KB'
  | 'bytes'
  | 'ms CPU'
  | 'ms CPU/machine'
  | 'handshakes/machine'
  | 'modules'
  | 'machines'
  | 'listings/cycle';

export interface Measured {
  /** What was run, in words. */
  readonly label: string;
  /** The figure itself (a median, a peak, a total). */
  readonly value: number;
  readonly unit: Unit;
  /** The samples' spread, when the value is a median of repeated runs. */
  readonly summary?: Summary;
}

/**
 * `ratio`: value ÷ baseline must stay ≤ max. `absolute`: the value itself must stay ≤ max
 * (the baseline is then context, e.g. the raw cost of the syscalls a poll cannot avoid).
 */
export type Goal =
  | { readonly kind: 'ratio'; readonly max: number }
  | { readonly kind: 'absolute'; readonly max: number; readonly unit: Unit }
  | { readonly kind: 'none' };

export interface Figure {
  /** Stable id, the key in bench-results.json. */
  readonly id: string;
  readonly title: string;
  readonly measured: Measured;
  readonly baseline: Measured | undefined;
  readonly ratio: number | undefined;
  readonly goal: Goal;
  /** undefined when there is no goal. */
  readonly met: boolean | undefined;
  /** Conditions that matter for reading the number (concurrency, file system, sample count…). */
  readonly notes: readonly string[];
}

export function figure(input: {
  readonly id: string;
  readonly title: string;
  readonly measured: Measured;
  readonly baseline?: Measured;
  readonly goal: Goal;
  readonly notes?: readonly string[];
}): Figure {
  const ratio =
    input.baseline && input.baseline.value > 0 ? input.measured.value / input.baseline.value : undefined;
  let met: boolean | undefined;
  if (input.goal.kind === 'ratio') met = ratio !== undefined && ratio <= input.goal.max;
  if (input.goal.kind === 'absolute') met = input.measured.value <= input.goal.max;
  return {
    id: input.id,
    title: input.title,
    measured: input.measured,
    baseline: input.baseline,
    ratio,
    goal: input.goal,
    met,
    notes: input.notes ?? [],
  };
}

/** A figure that could not be measured (a tool missing, a command failing): said, not hidden. */
export interface Skipped {
  readonly id: string;
  readonly title: string;
  readonly reason: string;
}

export function goalText(goal: Goal): string {
  switch (goal.kind) {
    case 'ratio':
      return `≤ ${goal.max}×`;
    case 'absolute':
      return `≤ ${goal.max} ${goal.unit}`;
    case 'none':
      return '—';
    default: {
      const never: never = goal;
      throw new Error(`unknown goal ${String(never)}`);
    }
  }
}

export function formatValue(value: number, unit: Unit): string {
  const digits = Number.isInteger(value) || value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit}`;
}
