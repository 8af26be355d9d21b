/**
 * The docs say what the code does: docs/cli.md's exit codes, config fields and time formats are
 * copies of the code's own tables (src/errors.ts, src/config/config.ts, src/app/time-formats.ts),
 * written by `npm run docs:tables`; `baton --help` prints the same exit codes; and no page
 * (README.md included) names a time format, a field count or an exit code the code does not have.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI_DOC, generatedBlocks, withGeneratedBlocks } from '../../scripts/docs-tables.js';
import { TIME_FORMATS, timePatternRegExp } from '../../src/app/time-formats.js';
import { CONFIG_FIELDS } from '../../src/config/config.js';
import { EXIT_CODES, exitCodeRows } from '../../src/errors.js';
import { REPO } from '../helpers/bundle-script.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';

/** README.md and every page under docs/. */
const pages = (): { name: string; text: string }[] => [
  { name: 'README.md', text: readFileSync(path.join(REPO, 'README.md'), 'utf8') },
  ...readdirSync(path.join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => ({ name: `docs/${name}`, text: readFileSync(path.join(REPO, 'docs', name), 'utf8') })),
];

const NUMBER_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

describe('the docs and --help agree with the code', () => {
  it("docs/cli.md's exit codes, config fields and time formats are the code's tables (npm run docs:tables writes them)", () => {
    const text = readFileSync(CLI_DOC, 'utf8');
    expect(text, 'docs/cli.md differs from the code: run npm run docs:tables').toBe(
      withGeneratedBlocks(text),
    );
    expect(generatedBlocks()['config-fields']!.join('\n')).toContain(`these ${CONFIG_FIELDS.length} fields`);
    for (const field of CONFIG_FIELDS) expect(text).toContain(`| \`${field}\` |`);
  });

  it("a page that carries a generated block (README.md too, if it keeps a copy) carries the code's version", () => {
    for (const page of pages()) {
      if (!page.text.includes('<!-- generated: ')) continue;
      expect(page.text, `${page.name} differs from the code: run npm run docs:tables`).toBe(
        withGeneratedBlocks(page.text),
      );
    }
  });

  it('`baton --help` lists every exit code the CLI uses, in the words of the table', async () => {
    assertBuilt();
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, '--help']);
    const listed = stdout
      .slice(stdout.indexOf('Exit codes:'))
      .split('\n')
      .slice(1)
      .map((line) => /^ {2}(\d) {2}(.+)$/.exec(line))
      .filter((m) => m !== null)
      .map((m) => ({ code: Number(m[1]), meaning: m[2] }));
    expect(listed).toEqual(exitCodeRows());
    expect(new Set(listed.map((r) => r.code))).toEqual(new Set([0, ...Object.values(EXIT_CODES)]));
    expect(listed.map((r) => r.meaning).join('\n')).not.toContain('see docs');
    // Exit 5 is every lock's, not only the authority's.
    expect(listed.find((r) => r.code === EXIT_CODES['lock-busy'])?.meaning).toContain('mesh lock');
  });

  it('`baton drill --help` states the one rule of its exits, with the codes of the table', async () => {
    assertBuilt();
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'drill', '--help']);
    const flat = stdout.replace(/\s+/g, ' ');
    expect(flat).toContain(
      `${EXIT_CODES.aborted} when left part-way: q on the drill's own screen or in the line-by-line drill, Ctrl-C`,
    );
    expect(flat).toContain(
      `Exits: 0 after the whole walk; ${EXIT_CODES.failed} when the sandbox could not start`,
    );
  });

  it('every time format prints as its pattern says', () => {
    const sample = new Date(Date.UTC(2026, 11, 1, 9, 5, 7, 42));
    for (const t of TIME_FORMATS) expect(t.format(sample), t.where).toMatch(timePatternRegExp(t.pattern));
  });

  it('no page names a time format, a number of config fields or an exit code the code does not have', () => {
    const patterns = TIME_FORMATS.map((t) => t.pattern);
    const codes = new Set([0, ...Object.values(EXIT_CODES)]);
    for (const page of pages()) {
      for (const m of page.text.matchAll(/`(YYYY[^`]*)`/g))
        expect(patterns, `${page.name} names the time format \`${m[1]}\``).toContain(m[1]);
      for (const m of page.text.matchAll(/\b(\w+) (?:config )?fields `deployment`/g)) {
        const n = NUMBER_WORDS.indexOf(m[1]!.toLowerCase());
        expect(n < 0 ? Number(m[1]) : n, `${page.name}: "${m[0]}"`).toBe(CONFIG_FIELDS.length);
      }
      // An exit-code table: `| exit | meaning |` or `| code | meaning |`, then rows `| N | … |`.
      const table = /^\| (?:exit|code) \| meaning \|\n\|---\|---\|\n((?:\| \d+ \|.*\n)+)/m.exec(page.text);
      if (table) {
        const rows = [...table[1]!.matchAll(/^\| (\d+) \|/gm)].map((r) => Number(r[1]));
        expect(new Set(rows), `${page.name}'s exit codes`).toEqual(codes);
      }
    }
  });
});
