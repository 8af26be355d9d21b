import { useInput } from 'ink';
import { keyIntent, type KeyIntent } from '../keys.js';

/**
 * Key presses as intents from the one key table. `typing` hands printable keys (q, r, ?, j, k)
 * and Enter to a text field — only Esc still comes through — so typing a fingerprint never
 * quits or moves. Gated by `isActive`, like Ink's own hooks.
 */
export function useKeys(onIntent: (intent: KeyIntent) => void, options: { readonly isActive: boolean; readonly typing?: boolean }): void {
  useInput(
    (input, key) => {
      const intent = keyIntent(input, key);
      if (intent === undefined) return;
      if (options.typing && intent !== 'back') return;
      onIntent(intent);
    },
    { isActive: options.isActive },
  );
}
