import { keyIntent } from '../keys.js';
import { useKeyStream } from '../hooks/use-key-stream.js';

export type DrillIntent = 'enter' | 'help' | 'escape' | 'quit' | 'interrupt';

/**
 * The drill's own keys, from the one key table. Ctrl-C is handled here (the drill renders
 * with exitOnCtrlC off) so that it quits THROUGH the drill and the sandbox is removed.
 */
export function useDrillKeys(
  onIntent: (intent: DrillIntent) => void,
  options: { readonly isActive: boolean },
): void {
  useKeyStream(
    (event) => {
      if (event.kind !== 'key') return undefined;
      const { input, key } = event;
      if (key.ctrl && input === 'c') return onIntent('interrupt');
      switch (keyIntent(input, key)) {
        case 'select':
          return onIntent('enter');
        case 'help':
          return onIntent('help');
        case 'back':
          return onIntent('escape');
        case 'quit':
          return onIntent('quit');
        default:
          return undefined;
      }
    },
    { isActive: options.isActive },
  );
}
