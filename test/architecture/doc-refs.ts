/**
 * Reading the pointers to documentation out of code and pages (doc-links.test.ts holds them
 * true). Slugs follow GitHub's (github-slugger): lowercased, punctuation other than `-` and `_`
 * dropped, each space a hyphen, a repeated heading numbered `-1`, `-2`: an anchor that works on
 * GitHub is the one checked here.
 */

export interface Ref {
  readonly raw: string;
  readonly line: number;
  /** Repository-relative (code and plain text) or as written (Markdown links). */
  readonly path: string;
  readonly anchor: string | undefined;
  readonly heading: string | undefined;
}

/** The text GitHub renders for a heading: code spans, emphasis and links reduced to their words. */
function headingText(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*)/g, '')
    .trim();
}

export function githubSlug(heading: string): string {
  return headingText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const opens = /^\s*(```|~~~)/.exec(line);
    if (opens) {
      if (fence === undefined) fence = opens[1];
      else if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ line: i + 1, text: line });
  });
  return out;
}

/** A page's headings: the anchors GitHub gives them, and their rendered text. */
export function headingsOf(markdown: string): { slugs: Set<string>; texts: Set<string> } {
  const slugs = new Set<string>();
  const texts = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!m?.[1]) continue;
    const base = githubSlug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
    texts.add(headingText(m[1]));
  }
  return { slugs, texts };
}

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** `[words](target)` and `![alt](target)` outside code blocks, except absolute URLs. */
export function markdownLinks(markdown: string): Ref[] {
  const out: Ref[] = [];
  for (const { line, text } of proseLines(markdown)) {
    for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [file = '', anchor] = target.split('#', 2);
      out.push({ raw: target, line, path: decodeURI(file), anchor, heading: undefined });
    }
  }
  return out;
}

const PAGE = String.raw`(?<![\w./-])(README\.md|docs/[\w.-]+\.md)`;

/** `docs/x.md`, `README.md#anchor`: repository-relative pointers in any text. */
export function pathRefs(text: string): Ref[] {
  return [...text.matchAll(new RegExp(`${PAGE}(?:#([\\w-]+))?`, 'g'))].map((m) => ({
    raw: m[0],
    line: lineAt(text, m.index),
    path: m[1] ?? '',
    anchor: m[2],
    heading: undefined,
  }));
}

/** `docs/x.md, "Heading"`, `docs/x.md ("Heading")`, `docs/x.md "Heading"`: a heading named by its text. */
export function quotedHeadingRefs(text: string): Ref[] {
  const pattern = new RegExp(`${PAGE}(?:,\\s*|\\s*\\(\\s*|\\s+)(?:(?:\\*|//)\\s*)?"([^"\\n]{1,100})"`, 'g');
  return [...text.matchAll(pattern)].map((m) => ({
    raw: m[0],
    line: lineAt(text, m.index),
    path: m[1] ?? '',
    anchor: undefined,
    heading: m[2],
  }));
}
