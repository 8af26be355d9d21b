/**
 * How full baton kept its places over one run, from the trace BATON_TRACE_PLACES writes
 * (src/mesh/place-trace.ts): every place taken and given back by mapBounded (each named by the
 * function that called it) and by the receipt wait's slots, with the limiter's window then.
 */
import { readFileSync } from 'node:fs';

interface Event {
  readonly at: number;
  readonly delta: number;
  readonly window: number;
  readonly name: string;
}

export interface Occupancy {
  /** From the process's start to its exit, ms. */
  readonly wallMs: number;
  /** Start → the first place taken (start-up, inventory, locks), ms. */
  readonly beforeMs: number;
  /** The last place given back → exit (closing the connections), ms. */
  readonly afterMs: number;
  /** Mean places busy between the first and the last (of `ceiling`). */
  readonly meanBusy: number;
  /** Time with no place busy between the first and the last, ms, and the longest such gaps. */
  readonly idleMs: number;
  readonly gaps: readonly { readonly ms: number; readonly after: string; readonly before: string }[];
  /** Per phase (mapBounded's caller): its span and its mean places busy. */
  readonly phases: readonly { readonly name: string; readonly ms: number; readonly meanBusy: number }[];
  /** The limiter's smallest window over the run (its ceiling, --concurrency, is 8 here). */
  readonly minWindow: number;
}

function parse(file: string): Event[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [at, delta, window, ...name] = line.split(' ');
      return { at: Number(at), delta: Number(delta), window: Number(window), name: name.join(' ') };
    })
    .sort((a, b) => a.at - b.at);
}

/** Time-weighted mean of a running count over [from, to]. */
function meanOf(events: readonly Event[], from: number, to: number): number {
  if (to <= from) return 0;
  let busy = 0;
  let last = from;
  let area = 0;
  for (const e of events) {
    const at = Math.min(Math.max(e.at, from), to);
    area += busy * (at - last);
    last = at;
    busy += e.delta;
  }
  area += busy * (to - last);
  return area / (to - from);
}

export function occupancy(file: string, startedAt: number, endedAt: number): Occupancy | undefined {
  const places = parse(file);
  if (places.length === 0) return undefined;
  const first = places[0]!.at;
  const last = places[places.length - 1]!.at;
  const gaps: { ms: number; after: string; before: string }[] = [];
  let busy = 0;
  let idleSince: { at: number; after: string } | undefined;
  for (const e of places) {
    if (busy === 0 && idleSince && e.delta > 0) {
      gaps.push({ ms: e.at - idleSince.at, after: idleSince.after, before: e.name });
      idleSince = undefined;
    }
    busy += e.delta;
    if (busy === 0) idleSince = { at: e.at, after: e.name };
  }
  const names = [...new Set(places.map((e) => e.name))];
  const phases = names.map((name) => {
    const own = places.filter((e) => e.name === name);
    const from = own[0]!.at;
    const to = own[own.length - 1]!.at;
    return { name, ms: to - from, meanBusy: meanOf(own, from, to) };
  });
  return {
    wallMs: endedAt - startedAt,
    beforeMs: first - startedAt,
    afterMs: endedAt - last,
    meanBusy: meanOf(places, first, last),
    idleMs: gaps.reduce((a, g) => a + g.ms, 0),
    gaps: [...gaps].sort((a, b) => b.ms - a.ms).slice(0, 3),
    phases,
    minWindow: Math.min(...places.map((e) => e.window)),
  };
}

/** One line for a figure's notes. */
export function occupancyWords(o: Occupancy | undefined): string {
  if (!o) return 'no place trace';
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  return `${ms(o.wallMs)}: start-up ${ms(o.beforeMs)}, closing ${ms(o.afterMs)}; places busy ${o.meanBusy.toFixed(1)} on average, the limiter's window down to ${o.minWindow}; none busy ${ms(o.idleMs)}${o.gaps.length ? ` (longest: ${o.gaps.map((g) => `${ms(g.ms)} ${g.after} → ${g.before}`).join(', ')})` : ''}; phases: ${o.phases.map((p) => `${p.name} ${ms(p.ms)} at ${p.meanBusy.toFixed(1)}`).join(', ')}`;
}
