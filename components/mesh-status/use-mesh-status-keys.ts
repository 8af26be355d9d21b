import { useInput } from 'ink';
import { keyIntent, type KeyIntent } from '../keys.js';

export type MeshStatusIntent = KeyIntent | 'filter' | { readonly typed: string };

/**
 * The table's keys: the shared intents, plus `/` to type a filter. While the filter is being
 * typed every printable key goes into it (so `q` filters rather than quits); Enter ends it and
 * Esc leaves it. Gated by `isActive`, like Ink's own hooks.
 */
export function useMeshStatusKeys(
  onIntent: (intent: MeshStatusIntent) => void,
  options: { readonly isActive: boolean; readonly typing: boolean; readonly filter: string },
): void {
  useInput(
    (input, key) => {
      if (options.typing) {
        if (key.escape) return onIntent('back');
        if (key.return) return onIntent('select');
        if (key.backspace || key.delete) return onIntent({ typed: options.filter.slice(0, -1) });
        if (!key.ctrl && !key.meta && input && !/[\x00-\x1f]/.test(input)) onIntent({ typed: options.filter + input });
        return;
      }
      if (input === '/' && !key.ctrl && !key.meta) return onIntent('filter');
      const intent = keyIntent(input, key);
      if (intent !== undefined) onIntent(intent);
    },
    { isActive: options.isActive },
  );
}
