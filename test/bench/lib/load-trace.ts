/**
 * What a command loads: every JavaScript file (bundle chunks, node_modules) a process reads as
 * a module, with its size and — for the bundle's chunks — which packages esbuild put in it
 * (dist/build-meta.json). Start-up is mostly parsing, so bytes loaded is where a regression
 * shows first, and this names the file to look at.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BIN } from './context.js';

export interface LoadedFile {
  readonly file: string;
  readonly bytes: number;
  /** The largest inputs of a bundle chunk, by package or source directory. */
  readonly contains: readonly string[];
}

export interface LoadTrace {
  readonly files: readonly LoadedFile[];
  readonly totalBytes: number;
}

/** `node --import REGISTER …` reports every module the process loads on its stderr. */
export const REGISTER = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), 'load-register.mjs')).href;

function chunkContents(): Map<string, string[]> {
  // The build's own metafile: beside its entry (dist/) or in the dist/ next to its bin/.
  const metaFile = [path.join(path.dirname(BIN), 'build-meta.json'), path.join(path.dirname(BIN), '..', 'dist', 'build-meta.json')].find(existsSync);
  const out = new Map<string, string[]>();
  if (!metaFile) return out;
  const buildRoot = path.dirname(path.dirname(metaFile));
  const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
  for (const [output, { inputs }] of Object.entries(meta.outputs)) {
    const byOrigin = new Map<string, number>();
    for (const [input, { bytesInOutput }] of Object.entries(inputs)) {
      const origin = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input.split('/').slice(0, 2).join('/');
      byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + bytesInOutput);
    }
    const top = [...byOrigin].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([origin, bytes]) => `${origin} ${Math.round(bytes / 1024)} KB`);
    out.set(path.resolve(buildRoot, output), top);
  }
  return out;
}

export async function traceLoads(file: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<LoadTrace> {
  const child = spawn(file, ['--import', REGISTER, ...args], { env, cwd, stdio: ['ignore', 'ignore', 'pipe'] });
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
  const contents = chunkContents();
  const files: LoadedFile[] = [];
  for (const match of stderr.matchAll(/^BATON_BENCH_LOAD (file:\S+)$/gm)) {
    const loaded = fileURLToPath(match[1]!);
    files.push({ file: loaded, bytes: statSync(loaded).size, contains: contents.get(loaded) ?? [] });
  }
  return { files, totalBytes: files.reduce((n, f) => n + f.bytes, 0) };
}

/** One line for a figure's notes: how many files, how many KB, and the largest three. */
export function describeTrace(trace: LoadTrace): string {
  const largest = [...trace.files].sort((a, b) => b.bytes - a.bytes).slice(0, 3);
  const named = largest.map((f) => `${path.basename(f.file)} ${Math.round(f.bytes / 1024)} KB${f.contains.length > 0 ? ` (${f.contains.join(', ')})` : ''}`);
  return `loads ${trace.files.length} JavaScript files, ${Math.round(trace.totalBytes / 1024)} KB; largest: ${named.join('; ')}`;
}
