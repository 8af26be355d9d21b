/** Cuts or pads `text` to exactly `width` columns (one column per code point here), so a row never wraps. */
export function fit(text: string, width: number): string {
  if (width <= 0) return '';
  const chars = [...text];
  if (chars.length <= width) return text + ' '.repeat(width - chars.length);
  return `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** Cuts without padding. */
export function clip(text: string, width: number): string {
  return fit(text, width).trimEnd();
}

/**
 * `text` laid out in a cell `width` columns wide, on as many lines as it takes: broken after a
 * `/`, a `,` or a space — between the names of a path or a list, never inside one — and a
 * single name wider than the cell continued on the next line. Nothing is cut: a cell that
 * ended in `…` had no key to show the rest (`consumes/pg-main/web…` at 60 columns).
 */
export function wrapCell(text: string, width: number): string[] {
  if (width <= 0) return [''];
  const pieces = text.match(/[^/, ]*(?:\/|, ?| )|[^/, ]+/g) ?? [''];
  const lines: string[] = [];
  let line = '';
  const room = (s: string) => [...s.trimEnd()].length <= width;
  for (const piece of pieces) {
    if (room(line + piece)) {
      line += piece;
      continue;
    }
    if (line) lines.push(line.trimEnd());
    let rest = [...piece];
    // A name wider than the whole cell: as much as fits, the rest on the next line.
    while (!room(rest.join(''))) {
      lines.push(rest.slice(0, width).join(''));
      rest = rest.slice(width);
    }
    line = rest.join('');
  }
  if (line || lines.length === 0) lines.push(line.trimEnd());
  return lines;
}
