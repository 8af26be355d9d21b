/**
 * The layers of DESIGN.md §3 hold only while the import graph reads one way: commands →
 * components → app → domain → adapters' ports. A cycle (type imports included) or a domain
 * module reaching up into a view, a command, ink or react would let a rule depend on a
 * terminal again, so this test fails on the first one and names the files.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cyclesOf, folderEdges, readImportGraph } from './import-graph.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const graph = readImportGraph(REPO, ['src', 'components']);

/** Below the views and the commands: none of these may import upwards or a UI library. */
const LOWER = ['pki', 'authority', 'store', 'transport', 'mesh', 'share', 'provisioner', 'config', 'app'].map((a) => `src/${a}/`);
const UPPER = ['components/', 'src/commands/'];
const UI_PACKAGE = /^(ink|react|@inkjs\/ui|ink-[\w-]+)(\/|$)/;

describe('the import graph of src/ and components/', () => {
  it('reads the sources it should (a guard against a walk that finds nothing)', () => {
    expect(graph.files.size).toBeGreaterThan(100);
    expect(graph.files.get(path.join('src', 'commands', 'mesh.ts'))).toContain(path.join('src', 'commands', 'rotation-cli.ts'));
  });

  it('has no cycle between files, type-only imports included', () => {
    expect(cyclesOf(graph.files)).toEqual([]);
  });

  it('has no cycle between folders (src/<area>, components)', () => {
    expect(cyclesOf(folderEdges(graph))).toEqual([]);
  });

  it('has no import from the domain, the adapters or the flows into a view, a command, ink or react', () => {
    const wrongWay: string[] = [];
    for (const [from, tos] of graph.files) {
      if (!LOWER.some((dir) => from.startsWith(dir.replaceAll('/', path.sep)))) continue;
      for (const to of tos) if (UPPER.some((dir) => to.startsWith(dir.replaceAll('/', path.sep)))) wrongWay.push(`${from} → ${to}`);
      for (const name of graph.packages.get(from) ?? []) if (UI_PACKAGE.test(name)) wrongWay.push(`${from} → ${name}`);
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
