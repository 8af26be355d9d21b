/**
 * docs/architecture.md's Layers table is the declaration of who may import whom; this keeps it
 * true. Every file under src/ and components/ belongs to the longest folder the table declares,
 * and each of its imports (type imports included) must land in that folder or one it may import.
 * A folder in src/ the table leaves out, or a row naming a folder that is gone, fails too: a map
 * that is silent or wrong about a part of the tree is how it stops being read.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readImportGraph } from './import-graph.js';
import { layerOf, parseLayerTable, readLayerTable, type Layer } from './layer-table.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const posix = (file: string): string => file.split(path.sep).join('/');

/** Every import that leaves its file's layer for one the table does not allow, as a sentence. */
function violations(layers: readonly Layer[], files: Map<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [from, tos] of files) {
    const own = layerOf(layers, from);
    if (own === undefined) {
      found.push(`${posix(from)}: no row of the Layers table declares its folder`);
      continue;
    }
    for (const to of tos) {
      const target = layerOf(layers, to);
      if (target === own) continue;
      if (target !== undefined && own.mayImport.includes(target.folder)) continue;
      const allowed =
        own.mayImport.length === 0 ? 'nothing' : own.mayImport.map((f) => `\`${f}\``).join(', ');
      found.push(
        `${posix(from)} imports ${posix(to)}: \`${own.folder}\` may import ${allowed}, not \`${target?.folder ?? posix(to)}\``,
      );
    }
  }
  return found.sort();
}

describe('the Layers table of docs/architecture.md', () => {
  const layers = readLayerTable(REPO);
  const declared = new Set(layers.map((l) => l.folder));

  it('declares every folder and top-level file of src/, and components/', () => {
    const present = [...readdirSync(path.join(REPO, 'src')).map((name) => `src/${name}`), 'components'];
    expect(present.filter((entry) => !declared.has(entry))).toEqual([]);
  });

  it('names only folders that exist', () => {
    expect([...declared].filter((folder) => !existsSync(path.join(REPO, folder)))).toEqual([]);
  });

  it('lets a row import only folders the table declares', () => {
    const unknown = layers.flatMap((l) =>
      l.mayImport.filter((to) => !declared.has(to)).map((to) => `${l.folder} → ${to}`),
    );
    expect(unknown).toEqual([]);
  });

  it('reads top to bottom: a row may import only rows below it', () => {
    const rank = new Map(layers.map((l, i) => [l.folder, i]));
    const upward = layers.flatMap((l) =>
      l.mayImport
        .filter((to) => (rank.get(to) ?? Infinity) <= rank.get(l.folder)!)
        .map((to) => `${l.folder} → ${to}`),
    );
    expect(upward).toEqual([]);
  });

  it('allows every import of every file under src/ and components/', () => {
    const graph = readImportGraph(REPO, ['src', 'components']);
    expect(graph.files.size).toBeGreaterThan(100);
    expect(violations(layers, graph.files)).toEqual([]);
  });
});

describe('the layer check itself', () => {
  const table = [
    '## Layers',
    '',
    '| folder | holds | may import |',
    '|---|---|---|',
    '| `src/commands/` | commands | `src/mesh`, `src/errors.ts` |',
    '| `src/mesh/`, `src/pki/` | rules | `src/errors.ts` |',
    '| `src/mesh/deep/` | a deeper folder | `src/mesh` |',
    '| `src/errors.ts` | errors | nothing |',
    '',
  ].join('\n');
  const layers = parseLayerTable(table);
  const at = (...parts: string[]): string => path.join(...parts);

  it('reads backticked folders, trailing slashes dropped, and "nothing"', () => {
    expect(layers).toContainEqual({ folder: 'src/pki', mayImport: ['src/errors.ts'] });
    expect(layers).toContainEqual({ folder: 'src/errors.ts', mayImport: [] });
    expect(layerOf(layers, at('src', 'mesh', 'deep', 'x.ts'))?.folder).toBe('src/mesh/deep');
  });

  it('names the file, the import and the rule for an upward import, and passes an allowed one', () => {
    const files = new Map([
      [
        at('src', 'mesh', 'a.ts'),
        [at('src', 'commands', 'b.ts'), at('src', 'errors.ts'), at('src', 'mesh', 'c.ts')],
      ],
      [at('src', 'commands', 'b.ts'), [at('src', 'mesh', 'a.ts')]],
      [at('src', 'mesh', 'deep', 'd.ts'), [at('src', 'mesh', 'a.ts')]],
      [at('src', 'other', 'e.ts'), []],
    ]);
    expect(violations(layers, files)).toEqual([
      'src/mesh/a.ts imports src/commands/b.ts: `src/mesh` may import `src/errors.ts`, not `src/commands`',
      'src/other/e.ts: no row of the Layers table declares its folder',
    ]);
  });

  it('refuses a "may import" cell it cannot read', () => {
    expect(() =>
      parseLayerTable(
        table.replace('`src/errors.ts` |\n| `src/mesh/deep/`', 'the ports |\n| `src/mesh/deep/`'),
      ),
    ).toThrow(/must be backticked folders or "nothing", not "the ports"/);
  });
});
