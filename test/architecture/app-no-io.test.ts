/**
 * src/app/ holds the flows — reducers and the modules that turn their effects into port calls —
 * and does no I/O of its own (docs/architecture.md, the `src/app/` row): files, sockets,
 * processes, PostgreSQL and timers reach it only through ports a command builds. A flow that
 * opened a file or slept would be one no test can walk without a disk or a clock, so this fails
 * on any package import but the few listed below and on any use of the process-wide globals that
 * do I/O or wait.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readImportGraph } from './import-graph.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The packages a flow may import, each with why it does no I/O. */
const PURE_PACKAGES: ReadonlyMap<string, string> = new Map([
  ['node:path', 'joins and splits names; it never touches the disk'],
]);

/** Globals that read or wait on the world outside the flow: a timer, the process, the network. */
const IO_GLOBALS = new Set(['setTimeout', 'setInterval', 'setImmediate', 'process', 'fetch', 'require']);

const inApp = (file: string): boolean => file.split(path.sep).join('/').startsWith('src/app/');

/** Every package import of a src/app file the list does not allow, as "file → package". */
function impureImports(packages: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [file, names] of packages) {
    if (!inApp(file)) continue;
    for (const name of names) if (!PURE_PACKAGES.has(name)) found.push(`${file} → ${name}`);
  }
  return found.sort();
}

/** Each use of an I/O global in `source` (identifiers only: comments and strings do not count). */
function ioGlobalsIn(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    // `x.process` or `{ process: 1 }` names a property, not the global.
    const parent = node.parent as ts.Node | undefined;
    const named =
      parent !== undefined &&
      (ts.isPropertyAccessExpression(parent) || ts.isPropertyAssignment(parent)) &&
      parent.name === node;
    if (ts.isIdentifier(node) && IO_GLOBALS.has(node.text) && !named) {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${fileName}:${line + 1} uses ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('src/app/ does no I/O of its own', () => {
  const graph = readImportGraph(REPO, ['src']);
  const appFiles = [...graph.files.keys()].filter(inApp);

  it('reads the flows it should (a guard against a walk that finds nothing)', () => {
    expect(appFiles.length).toBeGreaterThan(30);
  });

  it('imports no package but the pure ones listed here', () => {
    expect(impureImports(graph.packages)).toEqual([]);
  });

  it('uses no timer, process or network global', () => {
    const found = appFiles.flatMap((file) => ioGlobalsIn(file, readFileSync(path.join(REPO, file), 'utf8')));
    expect(found).toEqual([]);
  });
});

describe('the I/O check itself', () => {
  it('names a flow importing node:fs, pg or a timer, and passes node:path and files outside src/app', () => {
    const packages = new Map([
      [path.join('src', 'app', 'a.ts'), ['node:path', 'node:fs']],
      [path.join('src', 'app', 'drill', 'b.ts'), ['pg', 'node:timers/promises']],
      [path.join('src', 'commands', 'c.ts'), ['node:fs', 'node:child_process']],
    ]);
    expect(impureImports(packages)).toEqual([
      `${path.join('src', 'app', 'a.ts')} → node:fs`,
      `${path.join('src', 'app', 'drill', 'b.ts')} → node:timers/promises`,
      `${path.join('src', 'app', 'drill', 'b.ts')} → pg`,
    ]);
  });

  it('finds a sleep and a process read in code, not in a comment, a string or a property name', () => {
    const source = [
      '// setTimeout would be wrong here',
      "const words = 'process.env';",
      'const flow = { process: 1 };',
      'flow.process;',
      'await new Promise((r) => setTimeout(r, 100));',
      'const home = process.env.HOME;',
    ].join('\n');
    expect(ioGlobalsIn('x.ts', source)).toEqual(['x.ts:5 uses setTimeout', 'x.ts:6 uses process']);
  });
});
