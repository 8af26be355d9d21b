import { createContext, useContext } from 'react';

/** A turn the operator took that a real night would punish. */
export type Turn =
  { readonly kind: 'backed-out' } | { readonly kind: 'refused-entry'; readonly typed: string };

/**
 * How a view tells the drill about a wrong turn. Only the view knows what a key DID: Esc that
 * closes its help is no turn at all, Esc that leaves a confirm is a back-out. Outside the
 * drill nobody listens.
 */
export const TurnReport = createContext<(turn: Turn) => void>(() => {});

export function useTurnReport(): (turn: Turn) => void {
  return useContext(TurnReport);
}
