import { nextStep, retireStep, type NextStep } from '../next-step.js';
import type { LocalAuthority } from './types.js';

/** What an interrupted rotate or retire left, in words, and the one command that finishes it. */
export interface Interrupted {
  readonly op: 'rotate' | 'retire';
  readonly what: string;
  /**
   * True when billet's control plane cannot start on this dir as it is (its LoadOrCreateCA or
   * ServingCA refuses it; docs/authority-on-disk.md, "billet's reading of a state dir"): said, so that "whole"
   * is never shown for a dir billet will not serve from.
   */
  readonly billetStops: boolean;
  readonly step: NextStep;
}

/**
 * A whole current pair with an operation's footprint beside it is NOT "whole ✓": billet may
 * not start on it (a torn rotation, or ca-previous.crt without its key), and publishing it is
 * refused. This is the one place that names such a state, for status, `ca show` and decide.
 */
export function interruptedOf(local: LocalAuthority): Interrupted | undefined {
  if (local.state !== 'whole') return undefined;
  if (local.repairedTear)
    return {
      op: 'rotate',
      what: 'A rotation stopped between its two renames: ca.key is the new key beside the old ca.crt (paired here with ca-previous.key).',
      billetStops: true,
      step: nextStep('ca rotate'),
    };
  if (local.pending === 'rotate')
    return {
      op: 'rotate',
      what: 'A rotation stopped part-way: its new pair (or copies of the current one) are in ca/; the current authority is still the one in use.',
      // Half a previous pair, either half, stops the seed's billet (b2b42c1a: a lone
      // ca-previous.key too); a later billet ignores a lone key, never a lone certificate.
      billetStops: local.alone !== undefined,
      step: nextStep('ca rotate'),
    };
  if (local.pending === 'retire')
    return local.leftover?.file === 'ca-previous.key'
      ? {
          op: 'retire',
          what: `ca-previous.crt is absent and the previous key ${local.leftover.fingerprint} is alone in ca/ca-previous.key: a retire, or an install of an authority mid-overlap (which writes the previous key first), stopped part-way.`,
          // The seed's billet (b2b42c1a) refuses a lone ca-previous.key; only a later one ignores it.
          billetStops: true,
          step: retireStep(),
        }
      : {
          op: 'retire',
          what: 'A retire stopped part-way: ca-previous.crt remains without its key.',
          billetStops: true,
          step: nextStep('ca retire'),
        };
  return undefined;
}
