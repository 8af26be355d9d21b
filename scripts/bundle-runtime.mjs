// Loads baton's CommonJS bundles (the app: dist/app-<hash>.cjs; React and Ink:
// dist/ui-*-<hash>.cjs; the larger libraries: dist/lib-*-<hash>.cjs) with the V8 code cache the
// build wrote beside each. Node 20 keeps no compile cache of its own, and compiling was most of
// a cold start: `status --json` and the first TTY frame parsed the app's ES modules and Ink on
// every run (npm run bench, "Start-up"); from the cache V8 takes the compiled code instead.
//
// V8 checks a cache against its Node version, its flags and the source's LENGTH only: given
// another source of the same length it runs the cached code, not the file. So the bundle is
// named after its content hash and the cache is used only when the content still has that
// hash; otherwise (or when V8 refuses it) the bundle compiles as it would without one.
// Nothing here writes: a read-only install never changes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

/**
 * What the Ink bundle requires from the React bundle instead of carrying its own copy: each
 * specifier, and its name among the React bundle's exports. One React per process.
 */
export const FROM_REACT_BUNDLE = { react: 'react', 'react/jsx-runtime': 'jsxRuntime' };

/** The `modules` the Ink bundle runs with, taken from the React bundle's exports. */
export function fromReactBundle(reactExports) {
  return Object.fromEntries(Object.entries(FROM_REACT_BUNDLE).map(([specifier, name]) => [specifier, reactExports[name]]));
}

/** `<name>-<12 hex>.cjs`: the first 12 hex digits of the SHA-256 of the file's content. */
const NAMED_HASH = /-([0-9a-f]{12})\.cjs$/;
/**
 * What the build writes around every bundle: the file is the very function V8 compiles. Wrapping
 * at run time made a second copy of the source, which (with the first) filled the young
 * generation and cost `status --json` a garbage collection.
 */
export const FUNCTION_WRAPPER = { banner: { js: '(function (exports, require, module, __filename, __dirname) {' }, footer: { js: '\n})' } };

/**
 * Runs a CommonJS bundle, from its code cache (`<file>.cache`) when one was made from this very
 * content. `modules` answers the bundle's require() of packages it left out (another bundle's).
 * A bundle holds no import(): a script compiled from a cache loses the callback Node's loader
 * needs for one ("A dynamic import callback was not specified"), so the build makes each a
 * require() (scripts/build.mjs).
 */
export function runCachedBundle(bundle, { useCache = true, modules = {} } = {}) {
  const file = path.resolve(bundle);
  const bytes = readFileSync(file);
  let cachedData;
  const named = NAMED_HASH.exec(file)?.[1];
  if (useCache && named !== undefined && createHash('sha256').update(bytes).digest('hex').startsWith(named)) {
    try {
      cachedData = readFileSync(`${file}.cache`);
    } catch {
      cachedData = undefined; // no cache (a build without one): compile as usual
    }
  }
  const script = new vm.Script(bytes.toString('utf8'), { filename: file, cachedData });
  const module = { exports: {} };
  const nodeRequire = createRequire(file);
  const require = (id) => (Object.hasOwn(modules, id) ? modules[id] : nodeRequire(id));
  script.runInThisContext()(module.exports, require, module, file, path.dirname(file));
  return { exports: module.exports, script, cacheUsed: cachedData !== undefined && !script.cachedDataRejected };
}
