/**
 * What a command loads: every JavaScript file (the build's bundles, node_modules) a process
 * runs, with its size and — for a bundle — which packages esbuild put in it
 * (dist/build-meta.json). Start-up is mostly parsing, so bytes loaded is where a regression
 * shows first, and this names the file to look at.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface LoadedFile {
  readonly file: string;
  readonly bytes: number;
  /** What esbuild put in it, for one of the build's bundles (dist/build-meta.json). */
  readonly inputs: readonly string[];
  /** The largest inputs of a bundle, by package or source directory. */
  readonly contains: readonly string[];
}

export interface LoadTrace {
  readonly files: readonly LoadedFile[];
  readonly totalBytes: number;
}

/**
 * `node --import REGISTER …` reports every file the process loads on its stderr: ES modules,
 * CommonJS modules and the build's bundles (which run as vm.Scripts).
 */
export const REGISTER = pathToFileURL(
  path.join(path.dirname(fileURLToPath(import.meta.url)), 'load-register.mjs'),
).href;

type Outputs = Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;

/** The inputs of each output of the build that wrote `file` (dist/build-meta.json, in its directory or the one above). */
const metaOf = new Map<string, Map<string, Record<string, { bytesInOutput: number }>>>();
function bundleInputs(file: string): Record<string, { bytesInOutput: number }> {
  const dist = [path.dirname(file), path.dirname(path.dirname(file))].find((dir) =>
    existsSync(path.join(dir, 'build-meta.json')),
  );
  if (dist === undefined) return {};
  if (!metaOf.has(dist)) {
    const outputs = (
      JSON.parse(readFileSync(path.join(dist, 'build-meta.json'), 'utf8')) as { outputs: Outputs }
    ).outputs;
    // Output paths are relative to the project root, the directory above dist/.
    metaOf.set(
      dist,
      new Map(
        Object.entries(outputs).map(([output, { inputs }]) => [path.resolve(dist, '..', output), inputs]),
      ),
    );
  }
  return metaOf.get(dist)!.get(file) ?? {};
}

const packageOf = (file: string) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];

function largestOrigins(inputs: Record<string, { bytesInOutput: number }>): string[] {
  const byOrigin = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(inputs)) {
    const origin = packageOf(input) ?? input.split('/').slice(0, 2).join('/');
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + bytesInOutput);
  }
  return [...byOrigin]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([origin, bytes]) => `${origin} ${Math.round(bytes / 1024)} KB`);
}

export async function traceLoads(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): Promise<LoadTrace> {
  const child = spawn(file, ['--import', REGISTER, ...args], {
    env,
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return traceFromLog(stderr);
}

/** Reads the lines the load hook wrote (its stderr) into a trace; for a process whose stderr went to a file. */
export function traceFromLog(stderr: string): LoadTrace {
  const files: LoadedFile[] = [];
  const seen = new Set<string>();
  for (const match of stderr.matchAll(/^BATON_BENCH_LOAD (file:\S+)$/gm)) {
    const loaded = fileURLToPath(match[1]!);
    if (seen.has(loaded)) continue; // an ES module the hook saw, listed again from the require cache
    seen.add(loaded);
    const inputs = bundleInputs(loaded);
    files.push({
      file: loaded,
      bytes: statSync(loaded).size,
      inputs: Object.keys(inputs),
      contains: largestOrigins(inputs),
    });
  }
  return { files, totalBytes: files.reduce((n, f) => n + f.bytes, 0) };
}

/** The packages whose code the traced process loaded: from node_modules, or inside a bundle. */
export function packagesLoaded(trace: LoadTrace): Set<string> {
  const packages = new Set<string>();
  for (const { file, inputs } of trace.files) {
    for (const source of [file, ...inputs]) {
      const name = packageOf(source);
      if (name) packages.add(name);
    }
  }
  return packages;
}

/** One line for a figure's notes: how many files, how many KB, and the largest three. */
export function describeTrace(trace: LoadTrace): string {
  const largest = [...trace.files].sort((a, b) => b.bytes - a.bytes).slice(0, 3);
  // Its directory too: dist/ui/ui.mjs and a chunk beside it, bin/baton.js and a package's index.js.
  const named = largest.map(
    (f) =>
      `${path.join(path.basename(path.dirname(f.file)), path.basename(f.file))} ${Math.round(f.bytes / 1024)} KB${f.contains.length > 0 ? ` (${f.contains.join(', ')})` : ''}`,
  );
  return `loads ${trace.files.length} JavaScript files, ${Math.round(trace.totalBytes / 1024)} KB; largest: ${named.join('; ')}`;
}
