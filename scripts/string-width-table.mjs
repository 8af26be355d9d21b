// A build-time width table for string-width, the package Ink measures every cell with.
//
// Why: string-width's first non-ASCII call builds an Intl.Segmenter and compiles its Unicode
// property regexes (\p{RGI_Emoji} with the v flag alone takes ~100 ms on a loaded 2-core
// machine); every baton screen has box-drawing lines, "…" or "✓", so the first TTY frame paid
// ~200 ms for it (npm run bench, first-frame). The table answers the characters baton's
// screens use; anything else still goes to string-width itself, so no width can differ.
//
// Exactness: a code point enters the table only if it forms a grapheme cluster on its own
// next to any other table character (checked with Intl.Segmenter, below), so a string of table
// characters is a sequence of one-character clusters, whose width string-width computes as
// the sum of their widths — and each width in the table is string-width's own answer.

import { replaceOnce } from './replace-once.mjs';

/** The blocks baton's screens draw from: ASCII, Latin-1/Extended, Greek, punctuation to misc symbols. */
export const TABLE_RANGES = [
  [0x20, 0x7e],
  [0xa0, 0x2ff],
  [0x370, 0x3ff],
  [0x2000, 0x2bff],
];

/** True when `ch` never joins a neighbour into one grapheme cluster (Extend, ZWJ, Prepend, Hangul, regional indicators all would). */
export function standsAlone(segmenter, ch) {
  const probe = `a${ch}a${ch}${ch}`;
  return [...segmenter.segment(probe)].length === 5;
}

/**
 * One entry per range: its first code point and a string holding, per code point, its width as
 * a digit ('0'–'2') or 'x' when the runtime must ask string-width.
 */
export function buildWidthTable(stringWidth) {
  const segmenter = new Intl.Segmenter();
  return TABLE_RANGES.map(([first, last]) => {
    let widths = '';
    for (let cp = first; cp <= last; cp++) {
      const ch = String.fromCodePoint(cp);
      const width = standsAlone(segmenter, ch) ? stringWidth(ch) : -1;
      widths += width >= 0 && width <= 2 ? String(width) : 'x';
    }
    return [first, widths];
  });
}

/**
 * The source appended to string-width's module by the build: `stringWidth` answers from the
 * table when every character of the (ANSI-stripped) string is in it, and otherwise calls the
 * package's own function, renamed `originalStringWidth`, with the same arguments.
 */
export function tableWrapperSource(table) {
  return `
const WIDTH_TABLE = ${JSON.stringify(table)};
function tableWidth(text) {
  let width = 0;
  outer: for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    for (const [first, widths] of WIDTH_TABLE) {
      const digit = widths.charCodeAt(code - first) - 48;
      if (digit >= 0 && digit <= 2) { width += digit; continue outer; }
    }
    return -1;
  }
  return width;
}
export default function stringWidth(input, options = {}) {
  if (typeof input === 'string' && input.length > 0 && options.ambiguousIsNarrow !== false && !options.countAnsiEscapeCodes) {
    const width = tableWidth(input.includes('\\u001B') || input.includes('\\u009B') ? stripAnsi(input) : input);
    if (width >= 0) return width;
  }
  return originalStringWidth(input, options);
}
`;
}

/**
 * The module-level regexes that use Unicode properties, each made on first use. V8 builds a
 * property regex when its literal is evaluated, and `\\p{RGI_Emoji}` with the v flag takes
 * ~20 ms on these machines: every first TTY frame paid for a regex the table means it never runs.
 */
function propertyRegexesOnFirstUse(source) {
  let out = source;
  for (const [declaration, name, regex] of source.matchAll(/^const (\w+) = (\/.*\\p\{.*\/[a-z]*);$/gm)) {
    const lazy = `let ${name}Made;\nconst ${name}OnFirstUse = () => (${name}Made ??= ${regex});`;
    const [before, after] = out.split(declaration);
    const onFirstUse = (part) => part.replace(new RegExp(`\\b${name}\\b`, 'g'), `${name}OnFirstUse()`);
    out = `${onFirstUse(before)}${lazy}${onFirstUse(after)}`;
  }
  return out;
}

/**
 * string-width's source with its default export renamed, its Intl.Segmenter and its Unicode
 * property regexes made on first use (building them costs tens of ms even when the table
 * answers everything). Throws when the source no longer has the shape this expects, so a
 * dependency update is noticed at build time.
 */
export function rewriteStringWidth(source, table) {
  const replacements = [
    ['const segmenter = new Intl.Segmenter();', 'let segmenterMade;\nconst segmenterOf = () => (segmenterMade ??= new Intl.Segmenter());'],
    ['segmenter.segment(', 'segmenterOf().segment('],
    ['export default function stringWidth(', 'function originalStringWidth('],
  ];
  let out = source;
  for (const [from, to] of replacements) out = replaceOnce(out, from, to, { what: 'string-width', update: 'scripts/string-width-table.mjs' });
  if (!/^import stripAnsi from 'strip-ansi';$/m.test(out)) throw new Error('string-width: its index.js no longer imports stripAnsi; update scripts/string-width-table.mjs for this version.');
  return propertyRegexesOnFirstUse(out) + tableWrapperSource(table);
}
