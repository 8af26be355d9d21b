/**
 * The layers of docs/architecture.md hold only while the import graph reads one way: commands →
 * components → app → domain → adapters' ports. A cycle (type imports included) or a module below
 * the views reaching for ink or react would let a rule depend on a terminal again, so this test
 * fails on the first one and names the files. Which folder may import which is the Layers table's
 * to say, checked in layers.test.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cyclesOf, folderEdges, readImportGraph } from './import-graph.js';
import { layerOf, readLayerTable } from './layer-table.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const graph = readImportGraph(REPO, ['src', 'components']);

const layers = readLayerTable(REPO);
/** A view, or a layer the table lets mount one, may load a UI library; nothing below them may. */
const mayDraw = (file: string): boolean => {
  const layer = layerOf(layers, file);
  return layer !== undefined && (layer.folder === 'components' || layer.mayImport.includes('components'));
};
const UI_PACKAGE = /^(ink|react|@inkjs\/ui|ink-[\w-]+)(\/|$)/;

describe('the import graph of src/ and components/', () => {
  it('reads the sources it should (a guard against a walk that finds nothing)', () => {
    expect(graph.files.size).toBeGreaterThan(100);
    expect(graph.files.get(path.join('src', 'commands', 'mesh.ts'))).toContain(
      path.join('src', 'commands', 'rotation-cli.ts'),
    );
  });

  it('has no cycle between files, type-only imports included', () => {
    expect(cyclesOf(graph.files)).toEqual([]);
  });

  it('has no cycle between folders (src/<area>, components)', () => {
    expect(cyclesOf(folderEdges(graph))).toEqual([]);
  });

  it('has no import of ink or react below the views and the commands', () => {
    expect(
      mayDraw(path.join('components', 'StatusApp.tsx')) && mayDraw(path.join('src', 'commands', 'status.ts')),
    ).toBe(true);
    const wrongWay: string[] = [];
    for (const [from, names] of graph.packages) {
      if (mayDraw(from)) continue;
      for (const name of names) if (UI_PACKAGE.test(name)) wrongWay.push(`${from} → ${name}`);
    }
    expect(wrongWay).toEqual([]);
  });
});

describe('the cycle finder', () => {
  it('finds a cycle through three files and a self-import, and none in a chain', () => {
    const edges = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['d']],
      ['e', ['f']],
      ['f', []],
    ]);
    expect(cyclesOf(edges)).toEqual([['a', 'b', 'c'], ['d']]);
  });
});
