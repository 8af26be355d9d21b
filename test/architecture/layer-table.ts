/**
 * Reads the "Layers" table of docs/architecture.md, the one place the layers are declared. A row
 * names its folders (or top-level files) in backticks in the first column and what they may
 * import in the third: backticked folders, or the word "nothing". Anything else there throws, so
 * the table cannot drift into prose the test no longer understands.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Layer {
  /** Repo-relative, `/`-separated, no trailing slash: `src/mesh`, `components`, `src/errors.ts`. */
  readonly folder: string;
  readonly mayImport: readonly string[];
}

const TICKED = /`([^`]+)`/g;
const normal = (name: string): string => name.replace(/\/+$/, '');
const ticked = (cell: string): string[] => [...cell.matchAll(TICKED)].map((m) => normal(m[1]!));

export function parseLayerTable(markdown: string): Layer[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Layers\n'));
  if (section === undefined) throw new Error('docs/architecture.md has no "## Layers" section');
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  if (rows.length < 3 || rows[0]!.join('|') !== 'folder|holds|may import') {
    throw new Error('the Layers table must start with the header | folder | holds | may import |');
  }
  return rows.slice(2).flatMap((cells, i) => {
    if (cells.length !== 3) throw new Error(`Layers table row ${i + 1} has ${cells.length} cells, not 3`);
    const [folders, , allowed] = cells as [string, string, string];
    const names = ticked(folders);
    if (names.length === 0) throw new Error(`Layers table row ${i + 1} names no folder in backticks`);
    const mayImport = ticked(allowed);
    const rest = allowed.replace(TICKED, '').replace(/[,\s]/g, '');
    if (!(mayImport.length > 0 && rest === '') && !(mayImport.length === 0 && allowed === 'nothing')) {
      throw new Error(
        `Layers table row ${i + 1} (${names.join(', ')}): "may import" must be backticked folders or "nothing", not "${allowed}"`,
      );
    }
    return names.map((folder) => ({ folder, mayImport }));
  });
}

export function readLayerTable(repo: string): Layer[] {
  return parseLayerTable(readFileSync(path.join(repo, 'docs', 'architecture.md'), 'utf8'));
}

/** The declared layer a repo-relative file belongs to: the longest declared folder holding it. */
export function layerOf(layers: readonly Layer[], file: string): Layer | undefined {
  const posix = file.split(path.sep).join('/');
  return layers
    .filter((l) => posix === l.folder || posix.startsWith(`${l.folder}/`))
    .sort((a, b) => b.folder.length - a.folder.length)[0];
}
