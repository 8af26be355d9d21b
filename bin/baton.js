#!/usr/bin/env node
// Starts baton from what `npm run build` wrote (docs/build.md): dist/app.cjs, the CLI, and on
// a terminal dist/ui/ui.mjs, Ink and React. CommonJS (bin/package.json): an ES module entry
// would start Node's ESM loader, which `status --json` does not need.
//
// Start-up is mostly compiling. Node ≥ 22.1 keeps compiled code itself
// (module.enableCompileCache); Node 20 does not, so the app runs as a vm.Script from the V8
// code cache the build wrote. V8 checks a cache against the source's length only, so the
// cache is named after the content's hash and offered only to that content; a cache V8
// refuses (another Node, other flags) costs time, never a start. Nothing here writes.
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const APP = path.join(__dirname, '..', 'dist', 'app.cjs');

/** Compiles dist/app.cjs (from its cache when `useCache` and one was made from this content). */
function loadApp({ useCache = true, ui } = {}) {
  const source = readFileSync(APP);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  let cachedData;
  try {
    if (useCache) cachedData = readFileSync(`${APP}.${hash}.cache`);
  } catch {
    cachedData = undefined; // none: compile
  }
  const script = new vm.Script(source.toString('utf8'), { filename: APP, cachedData });
  const module = { exports: {} };
  const nodeRequire = Module.createRequire(APP);
  const require = (id) => {
    if (id !== 'baton:ui') return nodeRequire(id);
    if (ui === undefined)
      throw new Error(
        'baton: a view was opened without a terminal; Ink is loaded only when stdin and stdout are terminals.',
      );
    return ui;
  };
  script.runInThisContext()(module.exports, require, module, APP, path.dirname(APP));
  return {
    exports: module.exports,
    script,
    hash,
    cacheUsed: cachedData !== undefined && !script.cachedDataRejected,
  };
}

async function start() {
  Module.enableCompileCache?.();
  // The views' condition (src/commands/mount-view.ts, hasTerminal): only then is Ink loaded.
  // Chalk, inside it, fixes its colour level as it loads, so the app's no-colour rule
  // (src/config/config.ts: --no-color, NO_COLOR, TERM=dumb) is applied before, as openInk does.
  let ui;
  if (process.stdout.isTTY && process.stdin.isTTY) {
    if (
      process.argv.includes('--no-color') ||
      (process.env.NO_COLOR ?? '') !== '' ||
      process.env.TERM === 'dumb'
    )
      process.env.FORCE_COLOR = '0';
    ui = await import('../dist/ui/ui.mjs');
  }
  await loadApp({ ui }).exports.main(process.argv);
}

if (require.main === module) start();
module.exports = { loadApp }; // for the build, which writes the cache, and test/build
