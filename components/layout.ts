/** Side by side from 100 columns, stacked below (docs/cli.md). The one width predicate. */
export const SIDE_BY_SIDE_MIN_COLUMNS = 100;

export function isNarrow(columns: number): boolean {
  return columns < SIDE_BY_SIDE_MIN_COLUMNS;
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
  return wrapRanges(text, width, indent).map(
    (range, i) => `${i > 0 ? ' '.repeat(indent) : ''}${chars.slice(range.start, range.end).join('')}`,
  );
}

/**
 * A command the operator copies, laid out to `width` without the layout ever splitting it
 * where a shell would not: broken only between arguments, each continued line ending in ` \`,
 * so a copy of every line pastes as the one command. Fits whole on one line when it can.
 */
export function commandLines(command: string, width: number, lead = ''): string[] {
  if ([...`${lead}${command}`].length <= width) return [`${lead}${command}`];
  // Arguments as the shell splits them: a quoted path with a space in it is one, and so is a
  // placeholder (`<PREVIOUS 8>`): broken at its space, the operator reads two arguments.
  const words = command.match(/(?:<[^<>\n]*>|'[^']*'|"(?:\\.|[^"])*"|[^\s'"<])+/g) ?? [command];
  const lines: string[] = [];
  let line = lead.trimEnd();
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

/**
 * Where a suggested command sits in a sentence: from `prefix` (`baton`, with any global flags)
 * to the end of the text, a closing backtick or parenthesis, or a trailing " again".
 */
export function commandSpans(text: string, prefix = 'baton'): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`(^|[\\s\`(])(${escaped} )`, 'g');
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    const start = m.index + m[1]!.length;
    const rest = text.slice(start);
    // It also ends where the words stop being arguments: a mark (! ✓ ✗) starts the next thing said,
    // and "; " starts the note on a placeholder ("--confirm <ETAG 8>; <ETAG 8>: the first 8…").
    const stop = /`|\)|\s\(|;\s|\s+again\b|\s[!✓✗…·▸]\s|[.;,]?\s*$/.exec(rest);
    const end = start + (stop ? stop.index : rest.length);
    // A backticked command keeps its backticks: they are part of what is quoted.
    const quoted = m[1] === '`' && text[end] === '`';
    spans.push({ start: quoted ? start - 1 : start, end: quoted ? end + 1 : end });
    pattern.lastIndex = end;
  }
  return spans;
}

/**
 * A sentence that may hold commands, laid out to `width`: the prose word-wrapped, and each
 * command that does not fit on the line it starts on put on lines of its own by
 * `commandLines`, so the layout never breaks it where a shell would not join it again.
 */
export function layoutWithCommands(text: string, width: number, prefix = 'baton'): string[] {
  const spans = commandSpans(text, prefix);
  if (spans.length === 0) return wrapProse(text, width);
  const lines: string[] = [];
  let at = 0;
  /** Whether the last command took lines of its own: what follows it starts on a new line. */
  let split = true;
  const addProse = (part: string) => {
    // A placeholder's note ("; <PREVIOUS 8>: the 8 characters…") starts a line of its own: read
    // on the command's line, it looked like more of the command.
    const note = /^;\s+</.test(part);
    const trimmed = (note ? part.replace(/^;\s+/, '') : part).trim();
    if (!trimmed) return;
    const last = lines.length - 1;
    // Prose after a command continues on the command's last line when it fits there.
    if (last >= 0 && !split && !note && [...`${lines[last]} ${trimmed}`].length <= width)
      lines[last] = `${lines[last]} ${trimmed}`;
    else lines.push(...wrapProse(trimmed, width));
  };
  for (const span of spans) {
    const before = text.slice(at, span.start);
    const command = text.slice(span.start, span.end);
    addProse(before);
    const last = lines.length - 1;
    if (last >= 0 && [...`${lines[last]} ${command}`].length <= width) {
      lines[last] = `${lines[last]} ${command}`;
      split = false;
    } else {
      // Begun on the prose's line ("Next: baton … \") when a few words fit there: the copy
      // starts at `baton`, and the screen keeps a line.
      const lead = last >= 0 ? `${lines[last]} ` : '';
      const own = commandLines(command, width, lead);
      const firstWords = own[0]!
        .slice(lead.length)
        .split(' ')
        .filter((w) => w && w !== '\\').length;
      if (last >= 0 && firstWords >= 2) {
        lines.splice(last, 1, ...own);
        split = own.length > 1;
      } else {
        const alone = commandLines(command, width);
        lines.push(...alone);
        split = alone.length > 1;
      }
    }
    at = span.end;
  }
  addProse(text.slice(at));
  return lines;
}

/**
 * Prose word-wrapped with each short backticked name (`ca show`, `<PREVIOUS 8>`) and each
 * placeholder kept on one line: a break inside one reads as two things. No-break spaces stand
 * in for their spaces while wrapping (wrapRanges breaks only at ' ').
 */
function wrapProse(text: string, width: number): string[] {
  const kept = text.replace(/`[^`\n]+`|<[^<>\n]+>/g, (quoted) =>
    [...quoted].length <= width ? quoted.replace(/ /g, '\u00a0') : quoted,
  );
  return wrapWords(kept, width).map((line) => line.replace(/\u00a0/g, ' '));
}

/**
 * One line of plain output (the line-by-line dialogues on a terminal Ink cannot redraw) laid
 * out to `width`: its own indentation kept, continuations indented two more, words never
 * broken mid-way — the terminal's own wrap cut them anywhere.
 */
export function wrapPlainLine(line: string, width: number): string[] {
  const indent = line.length - line.trimStart().length;
  if (width <= indent + 10 || [...line].length <= width) return [line];
  const pad = ' '.repeat(indent);
  return wrapWords(line.trimStart(), width - indent - 2).map((part, i) =>
    i === 0 ? `${pad}${part}` : `${pad}  ${part}`,
  );
}
