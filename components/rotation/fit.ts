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
