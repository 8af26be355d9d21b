import { useInput } from 'ink';

/**
 * The rotation's keys as intents. Esc is `back` (it cancels before anything is generated and
 * never quits); `q` quits only when the operator is not typing; Ctrl-C always interrupts.
 * There is no single key that rotates: confirming takes the typed count and Enter.
 */
export type RotationIntent =
  | { readonly type: 'type'; readonly text: string }
  | { readonly type: 'erase' }
  | { readonly type: 'confirm' }
  | { readonly type: 'back' }
  | { readonly type: 'quit' }
  | { readonly type: 'interrupt' }
  | { readonly type: 'scroll'; readonly by: number };

const KEYS = { quit: 'q', down: 'j', up: 'k' } as const;

export function useRotationKeys(options: { readonly isActive: boolean; readonly typing: boolean; readonly onIntent: (intent: RotationIntent) => void }): void {
  const { typing, onIntent } = options;
  useInput(
    (input, key) => {
      if (key.ctrl && input === 'c') return onIntent({ type: 'interrupt' });
      if (key.escape) return onIntent({ type: 'back' });
      if (key.return) return onIntent({ type: 'confirm' });
      // The confirm field takes digits only, so j/k can scroll there too.
      if (key.downArrow || input === KEYS.down) return onIntent({ type: 'scroll', by: 1 });
      if (key.upArrow || input === KEYS.up) return onIntent({ type: 'scroll', by: -1 });
      if (key.pageDown) return onIntent({ type: 'scroll', by: 8 });
      if (key.pageUp) return onIntent({ type: 'scroll', by: -8 });
      if (typing) {
        if (key.backspace || key.delete) return onIntent({ type: 'erase' });
        if (/^[0-9]+$/.test(input)) return onIntent({ type: 'type', text: input });
        return undefined;
      }
      if (input === KEYS.quit) return onIntent({ type: 'quit' });
      return undefined;
    },
    { isActive: options.isActive },
  );
}
