import { keyIntent, NO_KEY } from '../keys.js';
import { useKeyStream } from '../hooks/use-key-stream.js';
import { editLine } from '../line-edit.js';

const isDigit = (char: string) => char >= '0' && char <= '9';

/**
 * The rotation's keys as intents, from the one key table (components/keys.ts). Esc is `back`
 * (it cancels before anything is generated and never quits); `q` quits only when the operator
 * is not typing; Ctrl-C always interrupts. No single key rotates: confirming takes the typed
 * count and Enter. The confirm field takes digits only, so j/k still scroll while typing.
 */
export type RotationIntent =
  /** A line edit of the count field (digits, Backspace in bursts, Ctrl-U, Ctrl-W). */
  | { readonly type: 'edit'; readonly edit: (typed: string) => string | undefined }
  | { readonly type: 'confirm' }
  | { readonly type: 'back' }
  | { readonly type: 'quit' }
  | { readonly type: 'interrupt' }
  | { readonly type: 'help' }
  /** `d`: every holder's row in full (the table cuts STATUS); not a digit, so it works while typing. */
  | { readonly type: 'detail' }
  | { readonly type: 'scroll'; readonly by: number };

const PAGE = 8;

export function useRotationKeys(options: {
  readonly isActive: boolean;
  readonly typing: boolean;
  readonly onIntent: (intent: RotationIntent) => void;
}): void {
  const { typing, onIntent } = options;
  useKeyStream(
    (event) => {
      // A pasted count is typed; anything else pasted here is not a digit and is dropped.
      if (event.kind === 'paste')
        return typing
          ? onIntent({ type: 'edit', edit: (typed) => editLine(typed, event.text, NO_KEY, isDigit) })
          : undefined;
      const { input, key } = event;
      if (key.ctrl && input === 'c') return onIntent({ type: 'interrupt' });
      if (key.pageDown) return onIntent({ type: 'scroll', by: PAGE });
      if (key.pageUp) return onIntent({ type: 'scroll', by: -PAGE });
      // The count takes digits only, so j/k still scroll and q is not text while typing.
      if (typing && editLine('', input, key, isDigit) !== undefined)
        return onIntent({ type: 'edit', edit: (typed) => editLine(typed, input, key, isDigit) });
      if (input === 'd' && !key.ctrl && !key.meta) return onIntent({ type: 'detail' });
      switch (keyIntent(input, key)) {
        case 'back':
          return onIntent({ type: 'back' });
        case 'select':
          return onIntent({ type: 'confirm' });
        case 'up':
          return onIntent({ type: 'scroll', by: -1 });
        case 'down':
          return onIntent({ type: 'scroll', by: 1 });
        case 'quit':
          return typing ? undefined : onIntent({ type: 'quit' });
        case 'help':
          return onIntent({ type: 'help' });
        default:
          return undefined;
      }
    },
    { isActive: options.isActive },
  );
}
