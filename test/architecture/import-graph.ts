/**
 * The import graph of src/ and components/, read with the TypeScript compiler's own scanner
 * (`preProcessFile`): static imports, `import type`, `export … from` and `import()` all count,
 * because a type-only cycle still ties two modules' meanings together.
 */
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface ImportGraph {
  /** Repo-relative file → the repo-relative files it imports (relative specifiers resolved). */
  readonly files: Map<string, string[]>;
  /** Repo-relative file → the bare package specifiers it imports (`ink`, `react/jsx-runtime`). */
  readonly packages: Map<string, string[]>;
}

const SOURCE = /\.(ts|tsx)$/;

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : SOURCE.test(name) ? [full] : [];
  });
}

/** `./x.js` names `./x.ts` or `./x.tsx` under NodeNext resolution. */
function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  const stem = base.replace(/\.(js|jsx|ts|tsx|mjs)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.tsx`, base, path.join(base, 'index.ts')]) {
    if (SOURCE.test(candidate) && existsSync(candidate)) return candidate;
  }
  return undefined;
}

export function readImportGraph(root: string, dirs: readonly string[]): ImportGraph {
  const files = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  for (const file of dirs.flatMap((d) => walk(path.join(root, d)))) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const local: string[] = [];
    const bare: string[] = [];
    for (const { fileName } of info.importedFiles) {
      if (fileName.startsWith('.')) {
        const target = resolveRelative(file, fileName);
        if (target === undefined) throw new Error(`${path.relative(root, file)}: cannot resolve ${fileName}`);
        local.push(path.relative(root, target));
      } else {
        bare.push(fileName);
      }
    }
    files.set(path.relative(root, file), local);
    packages.set(path.relative(root, file), bare);
  }
  return { files, packages };
}

/** Every strongly connected component with more than one node (or a self-loop), via Tarjan. */
export function cyclesOf(edges: Map<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (edges.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The folder a file belongs to for layering: `src/<area>`, `components`, or the file itself at src/. */
export function folderOf(file: string): string {
  const parts = file.split(path.sep);
  if (parts[0] === 'components') return 'components';
  if (parts[0] === 'src' && parts.length > 2) return `src/${parts[1]}`;
  return file;
}

/** The folder graph: an edge a→b whenever a file in a imports a file in b. */
export function folderEdges(graph: ImportGraph): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [from, tos] of graph.files) {
    const a = folderOf(from);
    const set = folders.get(a) ?? new Set<string>();
    for (const to of tos) if (folderOf(to) !== a) set.add(folderOf(to));
    folders.set(a, set);
  }
  return new Map([...folders].map(([k, v]) => [k, [...v]]));
}
