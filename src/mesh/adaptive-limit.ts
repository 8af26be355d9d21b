/**
 * How many machines to contact at once, adapted like TCP's congestion window (AIMD with slow
 * start): `--concurrency` is the ceiling, never passed; the window starts BELOW it (at most
 * INITIAL_WINDOW), doubles per window of timely answers while the controller has CPU to spare,
 * halves when the controller is saturated or answers slow down, and after a halving grows back
 * by one per window. Measured: at `--concurrency 64` a saturated 2-core controller spawned 64 ssh
 * at once, every call went slow together and the fixed per-call deadline expired for all of them
 * — 49 of 49 machines "unreachable", 0 drops in sshd's log. Starting at the ceiling meant there
 * was never a fast answer to compare with: all 64 were equally slow until they all timed out.
 *
 * The witnesses, each cheap:
 * - answer latency against the fastest answer seen (the "base RTT" of TCP Vegas/BBR): a call
 *   taking several times as long, and seconds longer, means the calls are queueing somewhere;
 * - this process's event-loop delay (the drift of a 100 ms timer): a loop that cannot turn
 *   cannot read the answers it is waiting for;
 * - the host's CPU pressure (Linux PSI, /proc/pressure/cpu "some avg10": the share of the last
 *   10 s in which a runnable task waited for a CPU). Whoever's work it is, our ssh children wait
 *   for the same cores: a saturated host stops the window growing past its start (it does not
 *   cut it — that is for answers that actually slowed). Without PSI, the load average per core
 *   stands in.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface ControllerPressure {
  /** The event loop's mean delay since the last read, in ms. */
  eventLoopDelayMs(): number;
  /** The 1-minute load average divided by the cores. */
  loadPerCore(): number;
  /** PSI's CPU "some avg10" in percent; undefined where the kernel has no /proc/pressure. */
  cpuPressure(): number | undefined;
}

/** A slower answer than this many times the fastest, and … */
export const SLOW_FACTOR = 3;
/** … at least this much slower, is the controller or the path saturating (not a slow disk's jitter). */
export const SLOW_MARGIN_MS = 2_000;
/** An event loop delayed this much on average is a controller that cannot keep up with its children. */
export const LAG_MS = 200;
/** Load per core above this is a saturated host when PSI is not there to say so. */
export const LOAD_PER_CORE = 1.5;
/** PSI CPU "some avg10" above this (percent) is a saturated host: runnable work waited most of the time. */
export const CPU_PRESSURE_PCT = 60;
/**
 * Where the window starts when the ceiling is higher: the default `--concurrency`, which stays
 * inside sshd's default MaxStartups (10) and is what a quiet controller was measured at.
 */
export const INITIAL_WINDOW = 8;

export interface Sample {
  readonly startedAt: number;
}

/** When any limiter in this process last saw the controller saturated (deadline retries read it). */
let lastSaturatedAt = Number.NEGATIVE_INFINITY;

export class AdaptiveLimit {
  private window: number;
  /** Timely answers since the window last grew. */
  private credits = 0;
  private fastestMs = Number.POSITIVE_INFINITY;
  private lastCutAt = Number.NEGATIVE_INFINITY;
  /** Slow start (doubling) until the first halving; additive growth after it, as TCP's ssthresh. */
  private slowStart = true;
  /** Halvings so far (a figure for the bench and the tests). */
  cuts = 0;
  /** The highest the window has been (a figure for the bench and the tests). */
  peak: number;

  constructor(
    /** `--concurrency`: the ceiling. */
    readonly ceiling: number,
    private readonly now: () => number = Date.now,
    private readonly pressure: ControllerPressure = processPressure(),
  ) {
    this.window = Math.min(this.max, INITIAL_WINDOW);
    this.peak = this.window;
  }

  private get max(): number {
    return Math.max(1, Math.floor(this.ceiling));
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
    if (slow || lagging) {
      lastSaturatedAt = now;
      // Once per round trip, as TCP halves once per window lost: the calls that were already in
      // flight when the first slow answer came back say the same thing again.
      if (this.lastCutAt <= sample.startedAt) {
        this.lastCutAt = now;
        this.credits = 0;
        this.slowStart = false;
        if (this.window > 1) {
          this.window = Math.max(1, Math.floor(this.window / 2));
          this.cuts += 1;
        }
      }
      return;
    }
    if (hostSaturated(this.pressure)) {
      lastSaturatedAt = now;
      // Answers still timely, but the cores are full: more at once would only queue. Hold —
      // except that a window halved below the start grows back toward it, one per window: held
      // at 2 while the host stays busy, a rotation of 50 took minutes after the slow answers had passed.
      if (this.window >= Math.min(this.max, INITIAL_WINDOW)) {
        this.credits = 0;
        return;
      }
    }
    this.credits += 1;
    if (this.credits >= this.window) {
      this.credits = 0;
      this.window = Math.min(this.max, this.slowStart ? this.window * 2 : this.window + 1);
      this.peak = Math.max(this.peak, this.window);
    }
  }
}

function hostSaturated(pressure: ControllerPressure): boolean {
  const psi = pressure.cpuPressure();
  return psi === undefined ? pressure.loadPerCore() > LOAD_PER_CORE : psi > CPU_PRESSURE_PCT;
}

/**
 * Was this controller saturated at any time since `sinceMs` (Date.now time)? A limiter saw slow
 * answers or a lagging loop then, or the host's CPU is saturated now (PSI's 10 s average, or the
 * load average without it). A read that got no answer while this was so is asked again
 * (src/transport/bound-transport.ts): its silence may be the controller's, not the machine's.
 */
export function controllerBusySince(
  sinceMs: number,
  pressure: ControllerPressure = processPressure(),
  nowMs: number = Date.now(),
): boolean {
  if (lastSaturatedAt >= sinceMs && lastSaturatedAt <= nowMs) return true;
  return hostSaturated(pressure) || pressure.eventLoopDelayMs() > LAG_MS;
}

let shared: ControllerPressure | undefined;
/** The event-loop probe's period. */
const TICK_MS = 100;
/** How often the event-loop delay and PSI are read; in between, the last reading stands. */
const READ_EVERY_MS = 250;

/**
 * This process's pressure, one monitor for every limiter: the event loop's delay is the drift of
 * a TICK_MS timer (unref'd: it never keeps the process alive), and each read takes the mean
 * drift since the last one, so a lag that has passed stops counting. Not perf_hooks'
 * monitorEventLoopDelay: under load a 20-machine rotation's CPU profile put 3–4% of its samples
 * in that histogram's reset(), more than anything of baton's own but spawning ssh.
 */
export function processPressure(): ControllerPressure {
  if (!shared) {
    const cores = Math.max(1, os.availableParallelism());
    let psiMissing = false;
    let lastTick = performance.now();
    let driftSum = 0;
    let ticks = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      driftSum += Math.max(0, now - lastTick - TICK_MS);
      ticks += 1;
      lastTick = now;
    }, TICK_MS);
    timer.unref();
    let lastReadAt = Number.NEGATIVE_INFINITY;
    let lastDelayMs = 0;
    let psiReadAt = Number.NEGATIVE_INFINITY;
    let lastPsi: number | undefined;
    shared = {
      eventLoopDelayMs() {
        const now = performance.now();
        if (now - lastReadAt < READ_EVERY_MS) return lastDelayMs;
        lastReadAt = now;
        // A tick still overdue counts too: a loop blocked since the last tick has no tick to show it.
        const overdue = Math.max(0, now - lastTick - TICK_MS);
        lastDelayMs = (driftSum + overdue) / (ticks + 1);
        driftSum = 0;
        ticks = 0;
        return lastDelayMs;
      },
      loadPerCore: () => os.loadavg()[0]! / cores,
      cpuPressure() {
        if (psiMissing) return undefined;
        const now = performance.now();
        if (now - psiReadAt < READ_EVERY_MS) return lastPsi;
        psiReadAt = now;
        try {
          const some = /^some avg10=([\d.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
          lastPsi = some ? Number(some[1]) : undefined;
          return lastPsi;
        } catch {
          // Not Linux, or a kernel without PSI (CONFIG_PSI): the load average stands in.
          psiMissing = true;
          return undefined;
        }
      },
    };
  }
  return shared;
}
