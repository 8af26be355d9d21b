/**
 * Nothing published here, but a document at a neighbouring prefix: the typo case (`…/wier`
 * for `…/wire`). Named with its deployment id, read loosely from the header — it is shown, never
 * trusted or installed.
 */
import { shown } from '../outside-text.js';
import type { Store } from '../store/store.js';

export interface Neighbour {
  readonly location: string;
  /** The `deployment` field as written, or undefined when the document has none readable. */
  readonly deployment: string | undefined;
}

export async function findNeighbours(store: Store): Promise<readonly Neighbour[]> {
  const found = (await store.neighbours?.().catch(() => [])) ?? [];
  return found.map(({ location, body }) => ({ location, deployment: deploymentField(body) }));
}

/** A sentence (with a leading space) naming the neighbours, or '' when there are none to name. */
export async function neighbourWords(store: Store, deployment: string): Promise<string> {
  const neighbours = await findNeighbours(store);
  if (neighbours.length === 0) return '';
  // Locations and deployment fields come from the store: shown, never printed raw.
  const named = neighbours.map(
    (n) =>
      `${shown(n.location)} (deployment ${n.deployment === undefined ? 'unreadable' : shown(n.deployment)}${n.deployment === deployment ? ', THIS deployment' : ''})`,
  );
  return ` Documents at neighbouring prefixes: ${named.join('; ')}. If one of them is this deployment's store, --store is mistyped.`;
}

function deploymentField(body: Uint8Array): string | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(body)) as { deployment?: unknown };
    return typeof value.deployment === 'string' ? value.deployment : undefined;
  } catch {
    return undefined;
  }
}
