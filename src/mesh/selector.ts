/**
 * Which pairs a rotation touches. One kind of selector, because "rotate everything that
 * matches any of these" is how an operator rotates more than they read in the preview; the
 * same flag given more than once (`--pair a --pair b`) selects the union of its values, and
 * the preview names each.
 */
import { BatonError } from '../errors.js';
import type { Inventory, Pair } from './inventory.js';

export type Selector =
  | { readonly by: 'consumer'; readonly name: string }
  | { readonly by: 'provider'; readonly name: string }
  | { readonly by: 'machine'; readonly name: string }
  | { readonly by: 'pair'; readonly provider: string; readonly consumer: string }
  /** Every pair of the inventory: only where a command says so (status; rotate with --older-than). */
  | { readonly by: 'all' }
  /** One flag given several times: the union of what each value selects. */
  | { readonly by: 'union'; readonly of: readonly Exclude<Selector, { by: 'all' | 'union' }>[] };

/** A flag's value, or its values when it was repeated (commander collects them). */
export interface SelectorFlags {
  readonly consumer?: string | readonly string[];
  readonly provider?: string | readonly string[];
  readonly machine?: string | readonly string[];
  readonly pair?: string | readonly string[];
}

const USAGE =
  'Pass exactly one of --consumer NAME, --provider NAME, --machine NAME, --pair PROVIDER:CONSUMER.';

/** `noneMeansAll`: no selector selects every pair (status reads; `--older-than` narrows). */
export function parseSelector(flags: SelectorFlags, noneMeansAll = false): Selector {
  const given = (['consumer', 'provider', 'machine', 'pair'] as const).filter((k) => flags[k] !== undefined);
  if (given.length === 0 && noneMeansAll) return { by: 'all' };
  if (given.length !== 1) {
    throw new BatonError('usage', {
      what:
        given.length === 0
          ? 'No pairs are selected.'
          : `Only one selector may be given; got ${given.map((k) => `--${k}`).join(' and ')}.`,
      next: USAGE,
      changed: 'Nothing was sent.',
    });
  }
  const by = given[0]!;
  const raw = flags[by]!;
  const values = [...new Set(typeof raw === 'string' ? [raw] : raw)];
  const one = (value: string): Exclude<Selector, { by: 'all' | 'union' }> => single(by, value);
  return values.length === 1 ? one(values[0]!) : { by: 'union', of: values.map(one) };
}

function single(
  by: 'consumer' | 'provider' | 'machine' | 'pair',
  value: string,
): Exclude<Selector, { by: 'all' | 'union' }> {
  if (by !== 'pair') return { by, name: value };
  const parts = value.split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    throw new BatonError('usage', {
      what: `--pair "${value}" is not PROVIDER:CONSUMER.`,
      next: 'For example --pair pg-main:web1-app.',
      changed: 'Nothing was sent.',
    });
  }
  return { by, provider: parts[0], consumer: parts[1] };
}

export function describeSelector(selector: Selector): string {
  if (selector.by === 'all') return 'every pair';
  if (selector.by === 'union') return selector.of.map(describeSelector).join(' ');
  return selector.by === 'pair'
    ? `--pair ${selector.provider}:${selector.consumer}`
    : `--${selector.by} ${selector.name}`;
}

/** The pairs a selector names. A name the inventory does not know is an error, never "no pairs". */
export function selectPairs(inventory: Inventory, selector: Selector): readonly Pair[] {
  const unknown = (kind: string, name: string, known: readonly string[]): never => {
    throw new BatonError('usage', {
      what: `The inventory has no ${kind} named "${name}".`,
      where: inventory.source,
      next: `Known ${kind}s: ${known.join(', ') || '(none)'}.`,
      changed: 'Nothing was sent.',
    });
  };
  let pairs: readonly Pair[];
  switch (selector.by) {
    case 'consumer':
      if (!inventory.consumers.some((c) => c.name === selector.name))
        unknown(
          'consumer',
          selector.name,
          inventory.consumers.map((c) => c.name),
        );
      pairs = inventory.pairs.filter((p) => p.consumer === selector.name);
      break;
    case 'provider':
      if (!inventory.providers.some((p) => p.name === selector.name))
        unknown(
          'provider',
          selector.name,
          inventory.providers.map((p) => p.name),
        );
      pairs = inventory.pairs.filter((p) => p.provider === selector.name);
      break;
    case 'machine':
      if (!inventory.machines.some((m) => m.name === selector.name))
        unknown(
          'machine',
          selector.name,
          inventory.machines.map((m) => m.name),
        );
      pairs = inventory.pairs.filter(
        (p) => p.providerMachine === selector.name || p.consumerMachine === selector.name,
      );
      break;
    case 'pair':
      pairs = inventory.pairs.filter(
        (p) => p.provider === selector.provider && p.consumer === selector.consumer,
      );
      if (pairs.length === 0)
        unknown(
          'pair',
          `${selector.provider}:${selector.consumer}`,
          inventory.pairs.map((p) => `${p.provider}:${p.consumer}`),
        );
      break;
    case 'all':
      pairs = inventory.pairs;
      break;
    case 'union': {
      const chosen = new Set(selector.of.flatMap((one) => selectPairs(inventory, one)));
      // Inventory order, each pair once.
      pairs = inventory.pairs.filter((p) => chosen.has(p));
      break;
    }
    default: {
      const never: never = selector;
      throw new Error(`unknown selector ${String(never)}`);
    }
  }
  if (pairs.length === 0) {
    throw new BatonError('usage', {
      what: `${describeSelector(selector)} selects no pairs: no consumer uses a provider there.`,
      where: inventory.source,
      next: 'Choose a consumer, provider or machine that is part of a pair.',
      changed: 'Nothing was sent.',
    });
  }
  return pairs;
}
