/**
 * Where each pair's window went, from the trace BATON_TRACE_WINDOWS writes
 * (src/mesh/place-trace.ts `windowTrace`): the receipt's way to the controller (applied_at →
 * read off the provider's reader), the controller's turn (read → rename sent) and the rename's
 * way to the machine (sent → renamed there). On the one-host bench the machines share the
 * controller's cores, so the last part grows with how many renames are in flight at once: the
 * burst is the provisioner's (how close together it wrote its receipts), not the controller's.
 */
import { readFileSync } from 'node:fs';
import { median } from './stats.js';

interface Moments {
  readonly applied: number;
  readonly seen: number;
  readonly sent: number;
  readonly renamed: number;
}

export interface WindowParts {
  readonly pairs: number;
  /** Medians, ms. */
  readonly toControllerMs: number;
  readonly turnMs: number;
  readonly toMachineMs: number;
  /** The longest controller's turn, ms (a rename held behind other work shows here). */
  readonly maxTurnMs: number;
  /** First to last applied_at: how close together the provisioner wrote the receipts, ms. */
  readonly receiptsSpreadMs: number;
  /** The most renames sent and not yet done on their machines at one moment. */
  readonly maxInFlight: number;
  /**
   * baton's main thread from the first receipt reading to the last (`<file>.cpu`, Linux only):
   * how long that was, how long the thread ran, and how long it waited, runnable, for a core.
   */
  readonly controller?: { readonly wallMs: number; readonly runMs: number; readonly waitMs: number };
}

/** The controller's thread between its first and last receipt reading, from `<file>.cpu`. */
function controllerThread(file: string): WindowParts['controller'] {
  let rows: number[][];
  try {
    rows = readFileSync(`${file}.cpu`, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => l.split(' ').map(Number));
  } catch {
    return undefined;
  }
  if (rows.length < 2) return undefined;
  const [first, last] = [rows[0]!, rows[rows.length - 1]!];
  return {
    wallMs: last[0]! - first[0]!,
    runMs: (last[1]! - first[1]!) / 1e6,
    waitMs: (last[2]! - first[2]!) / 1e6,
  };
}

export function windowParts(file: string): WindowParts | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const moments: Moments[] = text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [, applied, seen, sent, renamed] = l.split(' ').map(Number);
      return { applied: applied!, seen: seen!, sent: sent!, renamed: renamed! };
    });
  if (moments.length === 0) return undefined;
  // In flight: +1 at a send, -1 at its machine's rename (a rename is never before its send on one clock;
  // clamped, since the machine's clock is only as good as the channel's offset).
  const edges = moments
    .flatMap((m) => [
      { at: m.sent, d: 1 },
      { at: Math.max(m.sent, m.renamed), d: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.d - b.d);
  let inFlight = 0;
  let maxInFlight = 0;
  for (const e of edges) {
    inFlight += e.d;
    maxInFlight = Math.max(maxInFlight, inFlight);
  }
  const applied = moments.map((m) => m.applied);
  const controller = controllerThread(file);
  return {
    pairs: moments.length,
    toControllerMs: median(moments.map((m) => m.seen - m.applied)),
    turnMs: median(moments.map((m) => m.sent - m.seen)),
    toMachineMs: median(moments.map((m) => m.renamed - m.sent)),
    maxTurnMs: Math.max(...moments.map((m) => m.sent - m.seen)),
    receiptsSpreadMs: Math.max(...applied) - Math.min(...applied),
    maxInFlight,
    ...(controller ? { controller } : {}),
  };
}

export function windowPartsWords(p: WindowParts | undefined): string {
  if (!p) return 'no window trace';
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  const thread = p.controller
    ? `; baton's thread from its first receipt reading to its last (${ms(p.controller.wallMs)}): ran ${ms(p.controller.runMs)}, waited for a core ${ms(p.controller.waitMs)}`
    : '';
  return `medians: receipt → controller ${ms(p.toControllerMs)}, controller's turn ${ms(p.turnMs)} (max ${ms(p.maxTurnMs)}), rename → machine ${ms(p.toMachineMs)}; receipts written over ${ms(p.receiptsSpreadMs)}; at most ${p.maxInFlight} renames in flight${thread}`;
}
