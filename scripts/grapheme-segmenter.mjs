// A build-time grapheme segmenter for the packages Ink splits every frame's text with
// (@alcalzone/ansi-tokenize on each line drawn, slice-ansi when a line is cut).
//
// Why: both build an Intl.Segmenter when their module loads, and the first one a process makes
// loads ICU's break rules: ~16 ms of the first TTY frame (npm run bench, first-frame), on
// screens that are ASCII, box drawing and a few symbols. The bundled copies share one segmenter
// that answers such text itself and makes the Intl.Segmenter only for anything else.
//
// Exactness: the fast path takes a string only when every code unit is a character that never
// joins a neighbour into one cluster (the table, checked with Intl.Segmenter itself, as for the
// width table) or a control other than CR (which joins a following LF). Such a string's
// clusters are its characters, so the answer is the one Intl.Segmenter would give.
import { replaceOnce } from './replace-once.mjs';
import { standsAlone, TABLE_RANGES } from './string-width-table.mjs';

/** Per range: its first code point and, per code point, '1' when it stands alone, else '0'. */
export function buildStandaloneTable() {
  const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  return TABLE_RANGES.map(([first, last]) => {
    let flags = '';
    for (let cp = first; cp <= last; cp++) flags += standsAlone(segmenter, String.fromCodePoint(cp)) ? '1' : '0';
    return [first, flags];
  });
}

/** The shared module: `graphemeSegmenter.segment(text)` as Intl.Segmenter's, for iteration and containing(). */
export function graphemeSegmenterSource(table) {
  return `
const STANDALONE = ${JSON.stringify(table)};
let intl;
const intlSegmenter = () => (intl ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' }));
function standsAlone(code) {
  if (code < 0x20) return code !== 0x0d;
  if (code === 0x7f) return true;
  for (const [first, flags] of STANDALONE) {
    const at = code - first;
    if (at >= 0 && at < flags.length) return flags.charCodeAt(at) === 49;
  }
  return false;
}
class SingleCharacterSegments {
  constructor(input) { this.input = input; }
  containing(index) {
    const at = index === undefined ? 0 : Math.trunc(Number(index)) || 0;
    return at >= 0 && at < this.input.length ? { segment: this.input[at], index: at, input: this.input } : undefined;
  }
  *[Symbol.iterator]() {
    for (let at = 0; at < this.input.length; at++) yield { segment: this.input[at], index: at, input: this.input };
  }
}
export const graphemeSegmenter = {
  segment(value) {
    const input = String(value);
    for (let at = 0; at < input.length; at++) if (!standsAlone(input.charCodeAt(at))) return intlSegmenter().segment(input);
    return new SingleCharacterSegments(input);
  },
};
`;
}

/**
 * A package's source with its module-level grapheme segmenter taken from the shared module.
 * Throws when the declaration is not there exactly once, so a dependency update is noticed at
 * build time rather than shipping a second Intl.Segmenter.
 */
export function useSharedSegmenter(source, declaration, name, specifier) {
  return replaceOnce(source, declaration, `import { graphemeSegmenter as ${name} } from ${JSON.stringify(specifier)};`, { what: 'a text splitter', update: 'scripts/grapheme-segmenter.mjs' });
}
