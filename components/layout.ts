/** Side by side from 100 columns, stacked below (DESIGN.md §9). The one width predicate. */
export const SIDE_BY_SIDE_MIN_COLUMNS = 100;

export function isNarrow(columns: number): boolean {
  return columns < SIDE_BY_SIDE_MIN_COLUMNS;
}

/**
 * A path cut in the MIDDLE to `width` columns: its start (the root) and its end (the file
 * that matters) both stay readable, where cutting the end hid "…/worker1/.baton…".
 */
export function middleEllipsis(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width < 5) return chars.slice(0, Math.max(0, width)).join('');
  const tail = Math.ceil((width - 1) / 2);
  const head = width - 1 - tail;
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - tail).join('')}`;
}

/** A line of wrapped text: the code-point range [start, end) of the text it shows. */
export interface LineRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Word-wraps `text` to `width` columns (one per code point), breaking at spaces and dropping
 * the space at each break — Ink's own wrap keeps it, so wrapped lines began with a stray space.
 * A word longer than the width (a path, an id) is broken across lines, never cut. Lines after
 * the first have `indent` fewer columns; `\n` always breaks.
 */
export function wrapRanges(text: string, width: number, indent = 0): LineRange[] {
  const chars = [...text];
  const lines: LineRange[] = [];
  let start = 0;
  let end = 0;
  let i = 0;
  const room = () => Math.max(1, lines.length === 0 ? width : width - indent);
  const push = () => {
    lines.push({ start, end });
  };
  while (i <= chars.length) {
    if (i === chars.length || chars[i] === '\n') {
      push();
      i++;
      start = end = i;
      continue;
    }
    if (chars[i] === ' ') {
      i++;
      continue;
    }
    let wordEnd = i;
    while (wordEnd < chars.length && chars[wordEnd] !== ' ' && chars[wordEnd] !== '\n') wordEnd++;
    const empty = end === start;
    // The spaces before the word stay with it unless the line breaks there.
    if (wordEnd - (empty ? i : start) <= room()) {
      if (empty) start = i;
      end = wordEnd;
      i = wordEnd;
      continue;
    }
    if (!empty) {
      push();
      start = end = i;
      continue;
    }
    // A word wider than a whole line: as much as fits, the rest on the next.
    start = i;
    end = i + room();
    push();
    i = end;
    start = end = i;
  }
  return lines.length === 0 ? [{ start: 0, end: 0 }] : lines;
}

/** `wrapRanges` as the lines' text. */
export function wrapWords(text: string, width: number, indent = 0): string[] {
  const chars = [...text];
  return wrapRanges(text, width, indent).map((range, i) => `${i > 0 ? ' '.repeat(indent) : ''}${chars.slice(range.start, range.end).join('')}`);
}

/**
 * A command the operator copies, laid out to `width` without the layout ever splitting it
 * where a shell would not: broken only between arguments, each continued line ending in ` \`,
 * so a copy of every line pastes as the one command. Fits whole on one line when it can.
 */
export function commandLines(command: string, width: number): string[] {
  if ([...command].length <= width) return [command];
  // Arguments as the shell splits them: a quoted path with a space in it is one.
  const words = command.match(/(?:'[^']*'|"(?:\\.|[^"])*"|[^\s'"])+/g) ?? [command];
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    const candidate = line ? `${line} ${word}` : word;
    // Room for the " \" that continues the line.
    if (line && [...candidate].length + 2 > width) {
      lines.push(`${line} \\`);
      line = `  ${word}`;
    } else line = candidate;
  }
  lines.push(line);
  return lines;
}
