// The packages the app imports, as CommonJS bundles the app's own bundle loads when a command
// first needs them (scripts/bundle-runtime.mjs says how, and why from a code cache). The app's
// sources keep importing 'ink', 'pkijs', 'execa' and the rest: the build resolves each to a small
// module that takes it from its bundle, so every package is in the process once.
// React and Ink stay two bundles because loading Ink fixes the colour setting (chalk reads it
// once), and a view's module imports React before the command has set it
// (src/commands/mount-view.ts, openInk).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { replaceOnce } from './replace-once.mjs';
import { FROM_REACT_BUNDLE, FUNCTION_WRAPPER } from './bundle-runtime.mjs';

/**
 * Each bundle: what it exports (its entry), and the specifiers the app imports it by, each with
 * its name among the bundle's exports. `ui-*` bundles get a code cache drawn by
 * scripts/warm-ui-cache.mjs; the `lib-*` ones, loaded only by commands that do real work
 * (mint, ssh, SQL, S3, an inventory), compile when loaded, as their ES modules did.
 */
const BUNDLES = {
  'ui-react': { entry: "export { default as react } from 'react';\nexport * as jsxRuntime from 'react/jsx-runtime';", specifiers: FROM_REACT_BUNDLE },
  // Ink takes React from the React bundle (FROM_REACT_BUNDLE): one React per process.
  'ui-ink': { entry: "export * as ink from 'ink';", specifiers: { ink: 'ink' }, takesReact: true },
  // asn1js in the same file as pkijs: pkijs checks its objects with instanceof.
  'lib-pki': { entry: "export * as pkijs from 'pkijs';\nexport * as asn1js from 'asn1js';", specifiers: { pkijs: 'pkijs', asn1js: 'asn1js' } },
  'lib-execa': { entry: "export * as execa from 'execa';", specifiers: { execa: 'execa' } },
  'lib-pg': { entry: "export * as pg from 'pg';", specifiers: { pg: 'pg' } },
  'lib-zod': { entry: "export * as zod from 'zod';", specifiers: { zod: 'zod' } },
  'lib-yaml': { entry: "export * as yaml from 'yaml';", specifiers: { yaml: 'yaml' } },
  'lib-js-yaml': { entry: "export * as jsYaml from 'js-yaml';", specifiers: { 'js-yaml': 'jsYaml' } },
  'lib-s3': { entry: "export * as s3 from '@aws-sdk/client-s3';", specifiers: { '@aws-sdk/client-s3': 's3' } },
};
/** Every specifier a bundle answers: the app's build must not carry any of these packages itself. */
export const BUNDLED_PACKAGES = Object.values(BUNDLES).flatMap(({ specifiers }) => Object.keys(specifiers));
const RUNTIME = new URL('./bundle-runtime.mjs', import.meta.url).pathname;
const WARM = new URL('./warm-ui-cache.mjs', import.meta.url).pathname;

const fromPackage = (file) => ({ what: file, update: 'scripts/package-bundles.mjs' });

// A CommonJS bundle cannot wait at module level: the two top-level awaits of the UI libraries
// go. Ink's only run under DEV=true (React DevTools, not installed here).
const YOGA_INDEX = /yoga-layout[\\/]dist[\\/]src[\\/]index\.js$/;
const YOGA_WASM = /yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/;
const WASM_LITERAL = /H="data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)"/;
const withoutTopLevelAwait = {
  name: 'ui-without-top-level-await',
  setup(b) {
    b.onLoad({ filter: /ink[\\/]build[\\/]reconciler\.js$/ }, (args) => {
      let source = readFileSync(args.path, 'utf8');
      source = replaceOnce(source, "await import('./devtools.js')", 'void 0', fromPackage(args.path));
      source = replaceOnce(source, 'await loadPackageJson()', '{ name: undefined, version: undefined }', fromPackage(args.path));
      return { contents: source, loader: 'js' };
    });
    // yoga awaits its wasm instance; Emscripten's instantiateWasm hook takes a synchronous
    // one (Node compiles 70 KB of wasm in a few ms), and the module is ready when loadYoga returns.
    b.onLoad({ filter: YOGA_INDEX }, (args) => {
      const binary = readFileSync(path.join(path.dirname(args.path), '../binaries/yoga-wasm-base64-esm.js'), 'utf8');
      const wasm = WASM_LITERAL.exec(binary)?.[1];
      if (!wasm || !binary.includes('if(h.instantiateWasm)')) throw new Error(`${args.path}: yoga no longer embeds its wasm with an instantiateWasm hook; update scripts/package-bundles.mjs.`);
      // The module is replaced whole; it must still be the one await this stands in for.
      if (!readFileSync(args.path, 'utf8').includes('const Yoga = wrapAssembly(await loadYoga());')) {
        throw new Error(`${args.path}: yoga no longer starts with "wrapAssembly(await loadYoga())"; update scripts/package-bundles.mjs.`);
      }
      return {
        contents: [
          "import loadYoga from '../binaries/yoga-wasm-base64-esm.js';",
          "import wrapAssembly from './wrapAssembly.js';",
          `const wasm = Buffer.from(${JSON.stringify(wasm)}, 'base64');`,
          'const yoga = { instantiateWasm(imports, ready) { ready(new WebAssembly.Instance(new WebAssembly.Module(wasm), imports)); return {}; } };',
          'loadYoga(yoga);',
          "if (!yoga.calledRun) throw new Error('yoga-layout did not start synchronously');",
          'export default wrapAssembly(yoga);',
          "export * from './generated/YGEnums.js';",
        ].join('\n'),
        loader: 'js',
        resolveDir: path.dirname(args.path),
      };
    });
    b.onLoad({ filter: YOGA_WASM }, (args) => {
      let source = readFileSync(args.path, 'utf8');
      source = source.replace(WASM_LITERAL, 'H=""'); // the bytes are passed in above, not decoded twice
      source = replaceOnce(source, 'var _scriptDir = import.meta.url;', 'var _scriptDir = undefined;', fromPackage(args.path));
      return { contents: source, loader: 'js' };
    });
  },
};

/**
 * Builds the package bundles with the app's build options (`common`: minify, define, plugins);
 * for each, its file name `<name>-<content hash>.cjs`, its text and its metafile output.
 */
export async function buildPackageBundles(root, common, plugins = []) {
  const built = {};
  for (const [name, { entry, takesReact = false }] of Object.entries(BUNDLES)) {
    const result = await build({
      ...common,
      absWorkingDir: root,
      stdin: { contents: entry, resolveDir: root, loader: 'js', sourcefile: `${name}-entry.js` },
      outfile: path.join(root, 'dist', `${name}.cjs`),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      write: false,
      sourcemap: false,
      metafile: true,
      ...FUNCTION_WRAPPER,
      external: [...(takesReact ? Object.keys(FROM_REACT_BUNDLE) : []), 'pg-native'],
      plugins: [...common.plugins, withoutTopLevelAwait, ...plugins],
    });
    const text = result.outputFiles[0].text;
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
    built[name] = { fileName: `${name}-${hash}.cjs`, text, meta: Object.values(result.metafile.outputs)[0] };
  }
  return built;
}

/** The module that loads bundle `name` (and the bundles it takes packages from). */
const loaderOf = (name) => `baton-bundle:${name}`;

/**
 * The app build's side: each bundled specifier resolves to a CommonJS module whose exports are
 * the package's, taken from its bundle when the app first requires it. `fileOf(name)` is the
 * bundle's file name; the app's bundle is written beside it (its `__dirname` is where it looks).
 */
export function packagesFromBundles(fileOf) {
  const bundleOf = Object.fromEntries(Object.entries(BUNDLES).flatMap(([bundle, { specifiers }]) => Object.keys(specifiers).map((specifier) => [specifier, bundle])));
  const loaderSource = (name) =>
    [
      `const { fromReactBundle, runCachedBundle } = require(${JSON.stringify(RUNTIME)});`,
      "const path = require('node:path');",
      `module.exports = runCachedBundle(path.join(__dirname, ${JSON.stringify(fileOf(name))})${BUNDLES[name].takesReact ? `, { modules: fromReactBundle(require('${loaderOf('ui-react')}')) }` : ''}).exports;`,
    ].join('\n');
  // A bundle holds each package as a namespace (`export * as`), except React's own exports
  // object. A namespace is handed over marked as an ES module, so that a default import takes
  // its `default` (pg's CommonJS exports), not the namespace itself.
  const exportsOf = (specifier) => {
    const value = `require('${loaderOf(bundleOf[specifier])}').${BUNDLES[bundleOf[specifier]].specifiers[specifier]}`;
    return specifier === 'react' ? `module.exports = ${value};` : `module.exports = Object.defineProperty({ ...${value} }, '__esModule', { value: true });`;
  };
  const filter = new RegExp(`^(${Object.keys(bundleOf).map((s) => s.replace(/[/]/g, '\\/')).join('|')})$`);
  return {
    name: 'packages-from-bundles',
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'package-bundle' }));
      b.onResolve({ filter: /^baton-bundle:/ }, (args) => ({ path: args.path, namespace: 'package-bundle' }));
      b.onLoad({ filter: /.*/, namespace: 'package-bundle' }, (args) =>
        args.path.startsWith('baton-bundle:')
          ? { contents: loaderSource(args.path.slice('baton-bundle:'.length)), loader: 'js', resolveDir: path.dirname(RUNTIME) }
          : { contents: exportsOf(args.path), loader: 'js' },
      );
    },
  };
}

/**
 * Runs the UI bundles once in a fresh Node, drawing frames like baton's views do, and writes the
 * code cache V8 then holds (compiled render paths included) beside each, as `<file>.cache`.
 */
export function writeUiCaches(reactFile, inkFile) {
  const run = spawnSync(process.execPath, [WARM, reactFile, inkFile], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`Making the UI code caches failed:\n${run.stderr}`);
}
