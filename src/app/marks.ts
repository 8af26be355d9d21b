/**
 * Meaning never by colour alone (docs/cli.md, "Terminal or not"): every state a screen shows has a mark and a word,
 * and colour is only laid on top. One table, so `✓` means the same on every screen.
 */
export type Tone = 'ok' | 'action' | 'refused' | 'busy' | 'info';

export interface Mark {
  readonly glyph: string;
  /** Ink colour name, used only when colour is on. */
  readonly color: 'green' | 'yellow' | 'red' | 'cyan' | 'gray';
}

export const MARKS: Record<Tone, Mark> = {
  ok: { glyph: '✓', color: 'green' },
  action: { glyph: '!', color: 'yellow' },
  refused: { glyph: '✗', color: 'red' },
  busy: { glyph: '…', color: 'cyan' },
  info: { glyph: '·', color: 'gray' },
};
