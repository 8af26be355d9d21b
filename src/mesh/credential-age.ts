/**
 * Ages of credentials, in the units an operator writes them: `90d`, `12h`, `2w`, `30m`. One
 * parser for `--max-age` and `--older-than`, one way to print an age, so "older than 90d" in
 * a preview means what the flag said.
 */
import { BatonError } from '../errors.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `90d` → milliseconds; anything else is a usage error naming the flag. */
export function parseAge(flag: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(text.trim());
  const value = match ? Number(match[1]) * UNIT_MS[match[2]!]! : NaN;
  if (!Number.isFinite(value) || value <= 0) {
    throw new BatonError('usage', {
      what: `${flag} "${text}" is not an age.`,
      next: `Give a number and a unit (s, m, h, d or w), for example ${flag} 90d.`,
      changed: 'Nothing was sent.',
    });
  }
  return value;
}

/** `3d 4h`, `5h 02m`, `40s`: the two largest units, enough to compare at a glance. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3_600);
  const m = Math.floor((s % 3_600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m`;
  return `${s}s`;
}
