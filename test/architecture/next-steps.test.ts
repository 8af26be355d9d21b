/**
 * An error's "Next" is read by an operator who has the README and `--help`, not the design
 * notes or the issue tracker: a pointer at a design note or an issue number sends them to a
 * file that does not ship. This reads every string and template literal in src/ and
 * components/ (comments may cite the design; text a user can see may not). The same reading
 * keeps commands out of text: a suggested command is a NextStep the edge renders.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UNSHIPPED = /DESIGN\.md|STACK\.md|STYLE\.md|\bissue \d+|seeds\//i;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : /\.tsx?$/.test(name) ? [full] : [];
  });
}

/** The text of every literal a user could be shown, with where it is. */
function literals(file: string): { at: string; text: string }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { at: string; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      found.push({ at: `${path.relative(REPO, file)}:${line}`, text: node.text });
    }
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

describe('what baton tells a user', () => {
  it('never points at a file or an issue that does not ship with it', () => {
    const all = ['src', 'components'].flatMap((d) => sources(path.join(REPO, d))).flatMap(literals);
    expect(all.length).toBeGreaterThan(500);
    expect(all.filter((l) => UNSHIPPED.test(l.text)).map((l) => `${l.at}: ${l.text}`)).toEqual([]);
  });

  it('names a command as data, never as backticked `baton …` text that only a rewrite could give the flags', () => {
    // A command written into a string prints without --config, --state-dir or --inventory, and
    // nothing at the edge rewrites printed text: it must be a NextStep (src/next-step.ts).
    const all = ['src', 'components'].flatMap((d) => sources(path.join(REPO, d))).flatMap(literals);
    expect(all.filter((l) => /`baton /.test(l.text)).map((l) => `${l.at}: ${l.text}`)).toEqual([]);
  });
});
