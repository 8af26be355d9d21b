/**
 * Every pointer a reader follows must land: a comment's `docs/mesh-rotation.md, "Alternating
 * credentials"`, an error's `docs/inventory.md`, a page's `[link](rotating.md#the-window-…)`.
 * Moving text between the README and docs/ is how such pointers go stale without a test noticing;
 * this reads them all and resolves each one to a file and, where it names one, a heading (by
 * GitHub's anchor slug, or by its text when quoted).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { githubSlug, headingsOf, markdownLinks, quotedHeadingRefs, pathRefs } from './doc-refs.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCE = /\.(tsx?|mjs|js|md)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory())
      return name === 'node_modules' || name === 'results' ? [] : filesUnder(full);
    return SOURCE.test(name) ? [full] : [];
  });
}

const readers = [
  ...['src', 'components', 'test', 'docs', 'scripts']
    .flatMap((d) => filesUnder(path.join(REPO, d)))
    // This test and its reader hold pointers that must NOT land, to prove they are caught.
    .filter((f) => !/test\/architecture\/doc-(links\.test|refs)\.ts$/.test(f)),
  path.join(REPO, 'README.md'),
  path.join(REPO, 'eslint.config.js'),
];

const headingCache = new Map<string, ReturnType<typeof headingsOf>>();
function headings(file: string): ReturnType<typeof headingsOf> {
  let found = headingCache.get(file);
  if (!found) headingCache.set(file, (found = headingsOf(readFileSync(file, 'utf8'))));
  return found;
}

/** What is wrong with one pointer, or undefined when it lands. */
function problem(
  target: string,
  anchor: string | undefined,
  heading: string | undefined,
): string | undefined {
  if (!existsSync(target)) return 'no such file';
  if (!target.endsWith('.md')) return undefined;
  if (anchor !== undefined && !headings(target).slugs.has(anchor)) return `no heading with anchor #${anchor}`;
  if (heading !== undefined && !headings(target).texts.has(heading)) return `no heading "${heading}"`;
  return undefined;
}

describe('links and heading references', () => {
  it('the slugs are GitHub’s', () => {
    expect(githubSlug('The window of a credential rotation')).toBe('the-window-of-a-credential-rotation');
    expect(githubSlug('Bound to the data, not to `--yes`')).toBe('bound-to-the-data-not-to---yes');
    expect(githubSlug('--json')).toBe('--json');
    expect(githubSlug('`mesh rotate --revoke-previous` and `--end-sessions`')).toBe(
      'mesh-rotate---revoke-previous-and---end-sessions',
    );
    const twice = headingsOf('# A\n\n```sh\n# not a heading\n```\n\n## B\n\n## B\n');
    expect([...twice.slugs]).toEqual(['a', 'b', 'b-1']);
  });

  it('every link, anchor and quoted heading in src/, components/, test/, docs/, scripts/ and the README resolves', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of readers) {
      const text = readFileSync(file, 'utf8');
      const at = path.relative(REPO, file);
      if (file.endsWith('.md')) {
        for (const link of markdownLinks(text)) {
          checked += 1;
          const target = link.path === '' ? file : path.resolve(path.dirname(file), link.path);
          const why = problem(target, link.anchor, undefined);
          if (why) broken.push(`${at}:${link.line}: (${link.raw}) ${why}`);
        }
      }
      for (const ref of [...pathRefs(text), ...quotedHeadingRefs(text)]) {
        checked += 1;
        const why = problem(path.join(REPO, ref.path), ref.anchor, ref.heading);
        if (why) broken.push(`${at}:${ref.line}: ${ref.raw} ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('a pointer that does not land is reported, with where it is', () => {
    // The reader itself must see a wrong anchor, a missing heading and a missing page.
    const text = 'see docs/cli.md#no-such-thing and docs/cli.md, "No such heading", and docs/gone.md';
    const refs = [...pathRefs(text), ...quotedHeadingRefs(text)];
    const whys = refs.map((r) => problem(path.join(REPO, r.path), r.anchor, r.heading));
    expect(whys).toEqual([
      'no heading with anchor #no-such-thing',
      undefined,
      'no such file',
      'no heading "No such heading"',
    ]);
  });
});
