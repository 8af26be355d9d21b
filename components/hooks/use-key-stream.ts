import { useRef } from 'react';
import { useApp, useInput, useStdin } from 'ink';
import { createKeyReader, isCtrlC, type KeyEvent } from '../keys.js';

/**
 * Every view's input, key by key: the ONE way a component listens to the keyboard (it wraps
 * Ink's useInput, which hands a whole read over at once). Several keys in one read (`jj`,
 * `3⏎`, a prefix and Enter) reach `onKey` one at a time, in order; a bracketed paste arrives
 * as one `paste`; the keys after an Enter or Esc in the same read are dropped (components/keys.ts).
 *
 * Handlers see the keys of one read before React renders again, so a handler must read the
 * state it acts on from the flow (or a ref), not from the render that created it.
 */
export function useKeyStream(
  onKey: (event: KeyEvent) => void,
  options: { readonly isActive: boolean },
): void {
  const [reader] = useRefOnce(createKeyReader);
  const { exit } = useApp();
  const { internal_exitOnCtrlC: inkQuitsOnCtrlC } = useStdin();
  useInput(
    (input, key) => {
      const wasCut = reader.cutShort;
      for (const event of reader.read(input, key)) {
        // Ink quits on a Ctrl-C that arrives alone; one inside a burst (`ab^C`) must quit too.
        if (event.kind === 'key' && isCtrlC(event) && inkQuitsOnCtrlC && !(key.ctrl && input === 'c')) {
          exit();
          return;
        }
        onKey(event);
      }
      // The read is over once this macrotask's synchronous emits are: Ink hands every event
      // of one stdin read to its listeners in one loop, and microtasks run after it.
      if (reader.cutShort && !wasCut) queueMicrotask(() => reader.endRead());
    },
    { isActive: options.isActive },
  );
}

function useRefOnce<T>(make: () => T): [T] {
  const ref = useRef<T | undefined>(undefined);
  ref.current ??= make();
  return [ref.current];
}
