import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import { MARKS } from '../src/app/marks.js';
import { useColor } from './hooks/use-color.js';
import { useLineEdit } from './hooks/use-line-edit.js';

export interface GateFieldProps {
  readonly value: string;
  readonly onChange: (text: string) => void;
  readonly onSubmit: () => void;
  /** False while help is up, so keys do not land in the field behind it. */
  readonly isActive: boolean;
  /** Why the last Enter was refused; shown under the field until the text changes. */
  readonly refusal: string | undefined;
  readonly columns: number;
  readonly accept?: (char: string) => boolean;
}

/**
 * The text field of a typed gate: `> text▏`, then the reason the last Enter was refused.
 * Editing keys follow the shell's (Backspace, Ctrl-U, Ctrl-W); q and ? are text here.
 */
export function GateField({ value, onChange, onSubmit, isActive, refusal, columns, accept }: GateFieldProps) {
  const paint = useColor();
  useLineEdit({ value, onChange, onSubmit, isActive, ...(accept ? { accept } : {}) });
  return (
    <Box flexDirection="column" width={columns}>
      <Text>
        {'> '}
        {value}
        {isActive ? <Text inverse> </Text> : null}
      </Text>
      {refusal ? (
        <Prose
          width={columns}
          spans={[
            { text: `${MARKS.refused.glyph} not accepted: `, bold: true, color: paint(MARKS.refused.color) },
            { text: refusal },
          ]}
        />
      ) : null}
    </Box>
  );
}
