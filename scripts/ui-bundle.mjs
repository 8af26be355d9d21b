// The UI libraries as two CommonJS bundles with V8 code caches (scripts/ui-bundle-runtime.mjs
// says why): React alone, and Ink with yoga, chalk and the rest, which takes React from the
// first. The app's bundle keeps importing 'ink' and 'react': the build resolves those to small
// modules that take them from these bundles, so there is one React in the process. They stay
// two because loading Ink fixes the colour setting (chalk reads it once), and a view's module
// imports React before the command has set it (src/commands/mount-view.ts, openInk).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { replaceOnce } from './replace-once.mjs';
import { FROM_REACT_BUNDLE } from './ui-bundle-runtime.mjs';

/** Each bundle: what it exports (its entry), and the specifiers the app imports it by. */
const BUNDLES = {
  react: { entry: "export { default as react } from 'react';\nexport * as jsxRuntime from 'react/jsx-runtime';", specifiers: FROM_REACT_BUNDLE },
  ink: { entry: "export * as ink from 'ink';", specifiers: { ink: 'ink' } },
};
const RUNTIME = new URL('./ui-bundle-runtime.mjs', import.meta.url).pathname;
const WARM = new URL('./warm-ui-cache.mjs', import.meta.url).pathname;

const fromPackage = (file) => ({ what: file, update: 'scripts/ui-bundle.mjs' });

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
      if (!wasm || !binary.includes('if(h.instantiateWasm)')) throw new Error(`${args.path}: yoga no longer embeds its wasm with an instantiateWasm hook; update scripts/ui-bundle.mjs.`);
      // The module is replaced whole; it must still be the one await this stands in for.
      if (!readFileSync(args.path, 'utf8').includes('const Yoga = wrapAssembly(await loadYoga());')) {
        throw new Error(`${args.path}: yoga no longer starts with "wrapAssembly(await loadYoga())"; update scripts/ui-bundle.mjs.`);
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
 * Builds the UI bundles with the app's build options (`common`: minify, define, plugins); for
 * each, its file name `ui-<name>-<content hash>.cjs`, its text and its metafile output.
 */
export async function buildUiBundles(root, common) {
  const built = {};
  for (const [name, { entry }] of Object.entries(BUNDLES)) {
    const result = await build({
      ...common,
      absWorkingDir: root,
      stdin: { contents: entry, resolveDir: root, loader: 'js', sourcefile: `ui-${name}-entry.js` },
      outfile: path.join(root, 'dist', `ui-${name}.cjs`),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      write: false,
      sourcemap: false,
      metafile: true,
      external: name === 'react' ? [] : Object.keys(FROM_REACT_BUNDLE),
      plugins: [...common.plugins, withoutTopLevelAwait],
    });
    const text = result.outputFiles[0].text;
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
    built[name] = { fileName: `ui-${name}-${hash}.cjs`, text, meta: Object.values(result.metafile.outputs)[0] };
  }
  return built;
}

/**
 * The app build's side: 'ink', 'react' and 'react/jsx-runtime' resolve to modules that export
 * the bundles' values under the same names. `fromChunks(name)` is a bundle's path relative to
 * dist/chunks/, where the modules that load them must end up (the build checks: LOADERS).
 */
export async function uiFromBundles(fromChunks) {
  const names = {};
  const bundleOf = {};
  for (const [bundle, { specifiers }] of Object.entries(BUNDLES)) {
    for (const specifier of Object.keys(specifiers)) {
      names[specifier] = Object.keys(await import(specifier)).filter((name) => name !== 'default');
      bundleOf[specifier] = bundle;
    }
  }
  const loaderSource = {
    react: `export const bundle = runCachedBundle(fileURLToPath(new URL(${JSON.stringify(fromChunks('react'))}, import.meta.url))).exports;`,
    ink: [
      `import { bundle as react } from '${LOADERS.react}';`,
      `export const bundle = runCachedBundle(fileURLToPath(new URL(${JSON.stringify(fromChunks('ink'))}, import.meta.url)), { modules: fromReactBundle(react) }).exports;`,
    ].join('\n'),
  };
  const filter = new RegExp(`^(${Object.keys(bundleOf).map((s) => s.replace(/[/]/g, '\\/')).join('|')})$`);
  const loaders = new RegExp(`^(${Object.values(LOADERS).join('|')})$`);
  return {
    name: 'ui-from-bundles',
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'ui-from-bundles' }));
      b.onResolve({ filter: loaders }, (args) => ({ path: args.path, namespace: 'ui-from-bundles' }));
      b.onLoad({ filter: /.*/, namespace: 'ui-from-bundles' }, (args) => {
        const loaderOf = Object.entries(LOADERS).find(([, loader]) => loader === args.path)?.[0];
        if (loaderOf) {
          return {
            contents: [`import { fromReactBundle, runCachedBundle } from ${JSON.stringify(RUNTIME)};`, "import { fileURLToPath } from 'node:url';", loaderSource[loaderOf]].join('\n'),
            loader: 'js',
            resolveDir: path.dirname(RUNTIME),
          };
        }
        const bundle = bundleOf[args.path];
        const value = `bundle.${BUNDLES[bundle].specifiers[args.path]}`;
        const named = names[args.path].length > 0 ? `export const { ${names[args.path].join(', ')} } = ${value};` : '';
        const fallback = args.path === 'react' ? `export default ${value};` : '';
        return { contents: `import { bundle } from '${LOADERS[bundle]}';\n${named}\n${fallback}`, loader: 'js' };
      });
    },
  };
}

/** The modules that load each bundle: their output files must be in dist/chunks/. */
export const LOADERS = { react: 'baton-ui-react-bundle', ink: 'baton-ui-ink-bundle' };

/**
 * Runs the bundles once in a fresh Node, drawing frames like baton's views do, and writes the
 * code cache V8 then holds (compiled render paths included) beside each, as `<file>.cache`.
 */
export function writeUiCaches(reactFile, inkFile) {
  const run = spawnSync(process.execPath, [WARM, reactFile, inkFile], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`Making the UI code caches failed:\n${run.stderr}`);
}
