/**
 * THE ONE WAY text from outside baton reaches a terminal or a log. A store document's header, a
 * certificate's subject, a file name, the inventory, an S3 or PostgreSQL error: whoever can write
 * them can write ESC[8m (hide the rest), a CR (draw over the verdict), a line break (a forged
 * `Next:`) or a bidi override (reverse a fingerprint). Such a document once drew a forged verdict
 * on `status` and its pasted Next replaced the fleet's authority.
 *
 * `shown` makes every such character visible as an escape (`\x1b`, `\n`, `\u202e`) and bounds
 * the length, so what comes from outside is shown, never obeyed. `OutsideText` carries a raw
 * string so that it cannot be printed without it: its `toString` is the shown form (a template
 * literal escapes by itself), its `toJSON` the raw value (JSON stays JSON: the serializer escapes
 * C0 controls, `jsonForTerminal` the rest).
 */

/** How many characters of one outside string a line shows; the rest is counted, not drawn. */
export const SHOWN_MAX = 200;

/**
 * C0 controls and DEL, C1 controls, line and paragraph separators, bidi embeddings, overrides,
 * isolates and marks, zero-width characters and the BOM, and lone surrogates.
 */
const INVISIBLE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function visible(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const code = ch.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `raw` as it may be drawn: every invisible or steering character as an escape, at most `max`
 * characters of the original (counted in code points), then `…(+N)` for what was left out.
 */
export function shown(raw: string, max: number = SHOWN_MAX): string {
  const points = Array.from(raw);
  const kept = points.length > max ? points.slice(0, max).join('') : raw;
  const escaped = kept.replace(INVISIBLE, visible);
  return points.length > max ? `${escaped}…(+${points.length - max})` : escaped;
}

/** True when `raw` would be drawn exactly as it is (nothing to escape, nothing cut). */
export function isPlain(raw: string, max: number = SHOWN_MAX): boolean {
  INVISIBLE.lastIndex = 0;
  return !INVISIBLE.test(raw) && Array.from(raw).length <= max;
}

/** A string from outside baton: printed only through `shown`, compared and serialized raw. */
export class OutsideText {
  constructor(readonly raw: string) {}

  shown(max: number = SHOWN_MAX): string {
    return shown(this.raw, max);
  }

  toString(): string {
    return shown(this.raw);
  }

  toJSON(): string {
    return this.raw;
  }
}

/** `OutsideText` for a value that may be absent. */
export function outside(raw: string): OutsideText;
export function outside(raw: string | undefined): OutsideText | undefined;
export function outside(raw: string | undefined): OutsideText | undefined {
  return raw === undefined ? undefined : new OutsideText(raw);
}

/**
 * JSON for a terminal or a log: `JSON.stringify` escapes C0 controls but passes C1 controls,
 * bidi overrides and U+2028/2029 through raw; these become `\uXXXX`, which every JSON reader
 * decodes to the same value.
 */
export function jsonForTerminal(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
