import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import type { PanelRows } from '../src/app/status-rows.js';
import { FingerprintText } from './FingerprintText.js';

const LABEL_WIDTH = 13;
/** Border (2) and padding (2). */
const CHROME = 4;

export interface AuthorityPanelProps {
  readonly panel: PanelRows;
  /** Outer width of the panel, border included. */
  readonly width: number;
  /**
   * Stacked panels get a rule above instead of a box: two lines each that 80×24 cannot spare
   * (a frame taller than the terminal makes Ink clear the whole screen on every redraw).
   */
  readonly ruled?: boolean;
}

/** One side (LOCAL or PUBLISHED): where it lives, then its rows. */
export function AuthorityPanel({ panel, width, ruled = false }: AuthorityPanelProps) {
  const inner = Math.max(width - (ruled ? 0 : CHROME), 20);
  // Stacked, the title rides on the rule when it fits there whole: one line per panel saved,
  // which is what lets the left-behind status --watch show `sealed` and `cond. writes` at
  // 80×24 without PgDn. A title that does not fit keeps a line of its own (never cut).
  const titled = `── ${panel.title}  ${panel.where} `;
  const onRule = ruled && [...titled].length + 2 <= width;
  return (
    <Box
      flexDirection="column"
      borderStyle={ruled ? 'single' : 'round'}
      borderTop={!onRule}
      borderLeft={!ruled}
      borderRight={!ruled}
      borderBottom={!ruled}
      paddingX={ruled ? 0 : 1}
      width={width}
      flexShrink={0}
    >
      {onRule ? (
        <Text>
          {'── '}
          <Text bold>{panel.title}</Text>
          {`  ${panel.where} ${'─'.repeat(width - [...titled].length)}`}
        </Text>
      ) : (
        <Prose width={inner} spans={[{ text: panel.title, bold: true }, { text: `  ${panel.where}` }]} />
      )}
      {panel.rows.map((row) => {
        if (row.kind === 'fingerprint') {
          const inline = inner >= LABEL_WIDTH + row.value.text.length;
          return inline ? (
            <Box key={row.label}>
              <Box width={LABEL_WIDTH} flexShrink={0}>
                <Text>{row.label}</Text>
              </Box>
              <FingerprintText value={row.value} width={inner - LABEL_WIDTH} />
            </Box>
          ) : (
            <Box key={row.label} flexDirection="column">
              <Text>{row.label}</Text>
              <FingerprintText value={row.value} width={inner} />
            </Box>
          );
        }
        return (
          <Box key={row.label}>
            <Box width={LABEL_WIDTH} flexShrink={0}>
              <Text>{row.label}</Text>
            </Box>
            <Box width={inner - LABEL_WIDTH}>
              <Prose width={inner - LABEL_WIDTH} text={row.value} commands="baton" />
            </Box>
          </Box>
        );
      })}
    </Box>
  );
}
