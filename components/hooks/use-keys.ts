import { keyIntent, type KeyIntent } from '../keys.js';
import { useKeyStream } from './use-key-stream.js';

/**
 * Key presses as intents from the one key table, one per key even when several arrive in one
 * read. `typing` hands printable keys (q, r, ?, j, k) and Enter to a text field — only Esc
 * still comes through — so typing a fingerprint never quits or moves. A paste is text, never
 * intents. Gated by `isActive`, like Ink's own hooks.
 */
export function useKeys(
  onIntent: (intent: KeyIntent) => void,
  options: { readonly isActive: boolean; readonly typing?: boolean },
): void {
  useKeyStream(
    (event) => {
      if (event.kind !== 'key') return;
      const intent = keyIntent(event.input, event.key);
      if (intent === undefined) return;
      if (options.typing && intent !== 'back') return;
      onIntent(intent);
    },
    { isActive: options.isActive },
  );
}
