import { useRef } from 'react';
import { useInput } from 'ink';
import { editLine } from '../line-edit.js';

export interface LineEditOptions {
  readonly value: string;
  readonly onChange: (text: string) => void;
  readonly onSubmit: () => void;
  readonly isActive: boolean;
  /** What may be typed; everything printable by default. */
  readonly accept?: (char: string) => boolean;
}

/**
 * A gate's text field: line editing (Backspace in bursts, Ctrl-U, Ctrl-W) and Enter to submit.
 * Several keys can arrive between two renders; the latest text is kept in a ref so the second
 * key edits what the first produced, not the value the last render saw.
 */
export function useLineEdit({ value, onChange, onSubmit, isActive, accept }: LineEditOptions): void {
  const latest = useRef(value);
  latest.current = value;
  useInput(
    (input, key) => {
      if (key.return) {
        onSubmit();
        return;
      }
      const next = editLine(latest.current, input, key, accept);
      if (next === undefined || next === latest.current) return;
      latest.current = next;
      onChange(next);
    },
    { isActive },
  );
}
