import { keyIntent, NO_KEY, type KeyIntent } from '../keys.js';
import { editLine } from '../line-edit.js';
import { useKeyStream } from '../hooks/use-key-stream.js';

/** An edit of the filter field, applied to the filter as it is when the key is handled. */
export interface FilterEdit {
  readonly edit: (filter: string) => string | undefined;
}

export type MeshStatusIntent = KeyIntent | 'filter' | 'detail' | FilterEdit;

/**
 * The table's keys: the shared intents, plus `/` to type a filter and `d` for the row in full. While the filter is being
 * typed every printable key (and a paste) goes into it, with the gates' line editing — so `q`
 * filters rather than quits; Enter ends it and Esc leaves it. Gated by `isActive`, like Ink's
 * own hooks.
 */
export function useMeshStatusKeys(
  onIntent: (intent: MeshStatusIntent) => void,
  options: { readonly isActive: boolean; readonly typing: () => boolean },
): void {
  useKeyStream(
    (event) => {
      if (event.kind === 'paste') {
        if (options.typing()) onIntent({ edit: (filter) => editLine(filter, event.text, NO_KEY) });
        return;
      }
      const { input, key } = event;
      // Read now, not at the last render: `/abc` in one read types abc into the filter it opened.
      if (options.typing()) {
        if (key.escape) return onIntent('back');
        if (key.return) return onIntent('select');
        if (editLine('', input, key) !== undefined || key.backspace || key.delete)
          onIntent({ edit: (filter) => editLine(filter, input, key) });
        return;
      }
      if (input === '/' && !key.ctrl && !key.meta) return onIntent('filter');
      if (input === 'd' && !key.ctrl && !key.meta) return onIntent('detail');
      const intent = keyIntent(input, key);
      if (intent !== undefined) onIntent(intent);
    },
    { isActive: options.isActive },
  );
}
