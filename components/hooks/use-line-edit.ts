import { useRef } from 'react';
import { NO_KEY } from '../keys.js';
import { editLine } from '../line-edit.js';
import { useKeyStream } from './use-key-stream.js';

export interface LineEditOptions {
  readonly value: string;
  readonly onChange: (text: string) => void;
  readonly onSubmit: () => void;
  readonly isActive: boolean;
  /** What may be typed; everything printable by default. */
  readonly accept?: (char: string) => boolean;
}

/**
 * A gate's text field: line editing (Backspace in bursts, Ctrl-U, Ctrl-W), a paste typed as
 * text, and Enter to submit. The keys of one read arrive before the next render; the latest
 * text is kept in a ref so `NPK7rzgd⏎` edits eight times and then submits what was typed.
 */
export function useLineEdit({ value, onChange, onSubmit, isActive, accept }: LineEditOptions): void {
  const latest = useRef(value);
  latest.current = value;
  useKeyStream(
    (event) => {
      if (event.kind === 'key' && event.key.return) {
        onSubmit();
        return;
      }
      const next =
        event.kind === 'paste'
          ? editLine(latest.current, event.text, NO_KEY, accept)
          : editLine(latest.current, event.input, event.key, accept);
      if (next === undefined || next === latest.current) return;
      latest.current = next;
      onChange(next);
    },
    { isActive },
  );
}
