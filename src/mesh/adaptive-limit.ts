/**
 * How many machines to contact at once, adapted like TCP's congestion window (AIMD): it starts
 * at `--concurrency` — the ceiling, never passed — and halves when the controller is
 * saturated or answers slow down, then grows back by one per window of calls that came back
 * at the usual speed. Measured: at `--concurrency 64` a saturated 2-core controller spawned 64
 * ssh at once, every call went slow together and the fixed per-call deadline expired for all
 * of them — 49 of 49 machines "unreachable", 0 drops in sshd's log. Fewer at once finishes them.
 *
 * Two witnesses, each cheap and each about THIS controller:
 * - answer latency against the fastest answer seen (the "base RTT" of TCP Vegas/BBR): a call
 *   taking several times as long, and seconds longer, means the calls are queueing somewhere;
 * - this process's event-loop delay (perf_hooks.monitorEventLoopDelay): a loop that cannot
 *   turn cannot read the answers it is waiting for. The 1-minute load average per core is read
 *   only beside slow answers — on a shared host it also counts other people's work.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import os from 'node:os';

export interface ControllerPressure {
  /** The event loop's delay over the last sample, in ms (mean of the histogram). */
  eventLoopDelayMs(): number;
  /** The 1-minute load average divided by the cores. */
  loadPerCore(): number;
}

/** A slower answer than this many times the fastest, and … */
export const SLOW_FACTOR = 3;
/** … at least this much slower, is the controller or the path saturating (not a slow disk's jitter). */
export const SLOW_MARGIN_MS = 2_000;
/** An event loop delayed this much on average is a controller that cannot keep up with its children. */
export const LAG_MS = 200;
/** Load per core above this, beside slow answers, is a saturated controller. */
export const LOAD_PER_CORE = 1.5;

export interface Sample {
  readonly startedAt: number;
}

export class AdaptiveLimit {
  private window: number;
  /** Timely answers since the window last grew: one more place per window of them. */
  private credits = 0;
  private fastestMs = Number.POSITIVE_INFINITY;
  private lastCutAt = Number.NEGATIVE_INFINITY;
  /** Halvings so far (a figure for the bench and the tests). */
  cuts = 0;

  constructor(
    /** `--concurrency`: the ceiling, and where it starts. */
    readonly ceiling: number,
    private readonly now: () => number = Date.now,
    private readonly pressure: ControllerPressure = processPressure(),
  ) {
    this.window = Math.max(1, Math.floor(ceiling));
  }

  /** How many may be in flight now. */
  get limit(): number {
    return this.window;
  }

  start(): Sample {
    return { startedAt: this.now() };
  }

  /** A call ended (answered or failed): its latency moves the window. */
  done(sample: Sample): void {
    const now = this.now();
    const tookMs = now - sample.startedAt;
    const slow = tookMs > this.fastestMs * SLOW_FACTOR && tookMs - this.fastestMs > SLOW_MARGIN_MS;
    this.fastestMs = Math.min(this.fastestMs, tookMs);
    const lagging = this.pressure.eventLoopDelayMs() > LAG_MS;
    const loaded = slow && this.pressure.loadPerCore() > LOAD_PER_CORE;
    if (slow || lagging || loaded) {
      // Once per round trip, as TCP halves once per window lost: the calls that were already in
      // flight when the first slow answer came back say the same thing again.
      if (this.lastCutAt <= sample.startedAt) {
        this.lastCutAt = now;
        this.credits = 0;
        if (this.window > 1) {
          this.window = Math.max(1, Math.floor(this.window / 2));
          this.cuts += 1;
        }
      }
      return;
    }
    this.credits += 1;
    if (this.credits >= this.window) {
      this.credits = 0;
      this.window = Math.min(Math.max(1, Math.floor(this.ceiling)), this.window + 1);
    }
  }
}

let shared: { histogram: IntervalHistogram; pressure: ControllerPressure } | undefined;

/**
 * This process's pressure, one monitor for every limiter: each read takes the mean delay since
 * the last one and starts the next sample, so a lag that has passed stops counting.
 */
export function processPressure(): ControllerPressure {
  if (!shared) {
    const histogram = monitorEventLoopDelay({ resolution: 20 });
    histogram.enable();
    const cores = Math.max(1, os.availableParallelism());
    shared = {
      histogram,
      pressure: {
        eventLoopDelayMs() {
          const mean = histogram.count > 0 ? histogram.mean / 1e6 : 0;
          histogram.reset();
          // The monitor's own resolution is in every sample: only the delay beyond it counts.
          return Math.max(0, mean - 20);
        },
        loadPerCore: () => os.loadavg()[0]! / cores,
      },
    };
    // Never keeps the process alive: the histogram's timer is unref'd by Node.
  }
  return shared.pressure;
}
