/**
 * Writes the tables docs/cli.md copies from the code: the exit codes (src/errors.ts), the config
 * fields (src/config/config.ts) and the time formats (src/app/time-formats.ts), each between
 * its `<!-- generated: NAME -->` and `<!-- end generated -->` marks. test/docs/tables.test.ts
 * fails when the file and the code differ; `npm run docs:tables` writes the code's version.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_FIELD_HELP, CONFIG_FIELDS } from '../src/config/config.js';
import { exitCodeRows } from '../src/errors.js';
import { TIME_FORMATS } from '../src/app/time-formats.js';

export const CLI_DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'cli.md');

/** Each generated block's lines, by name. */
export function generatedBlocks(): Record<string, string[]> {
  return {
    'exit-codes': [
      '| code | meaning |',
      '|---|---|',
      ...exitCodeRows().map(({ code, meaning }) => `| ${code} | ${meaning} |`),
    ],
    'config-fields': [
      `The file is a mapping of these ${CONFIG_FIELDS.length} fields; an unknown field is refused, never ignored.`,
      '',
      '| field | what |',
      '|---|---|',
      ...CONFIG_FIELDS.map((field) => `| \`${field}\` | ${CONFIG_FIELD_HELP[field]} |`),
    ],
    'time-formats': [
      '| where | format |',
      '|---|---|',
      ...TIME_FORMATS.map((t) => `| ${t.where} | \`${t.pattern}\` |`),
    ],
  };
}

const MARK = (name: string) => `<!-- generated: ${name} (npm run docs:tables) -->`;
const END = '<!-- end generated -->';

/** `text` with every generated block replaced by the code's version; throws on a missing mark. */
export function withGeneratedBlocks(text: string): string {
  let out = text;
  for (const [name, lines] of Object.entries(generatedBlocks())) {
    const start = out.indexOf(MARK(name));
    if (start < 0) throw new Error(`docs/cli.md has no ${MARK(name)} mark`);
    const end = out.indexOf(END, start);
    if (end < 0) throw new Error(`docs/cli.md: the ${name} block has no ${END}`);
    out = `${out.slice(0, start)}${MARK(name)}\n${lines.join('\n')}\n${out.slice(end)}`;
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const before = readFileSync(CLI_DOC, 'utf8');
  const after = withGeneratedBlocks(before);
  if (after !== before) writeFileSync(CLI_DOC, after);
  console.log(after === before ? 'docs/cli.md: the tables match the code' : 'docs/cli.md: tables written');
}
