#!/usr/bin/env node
// Starts baton from what `npm run build` wrote (docs/build.md): dist/app.cjs, the CLI, and on
// a terminal dist/ui/ui.mjs, Ink and React. CommonJS (bin/package.json): an ES module entry
// would start Node's ESM loader, which `status --json` does not need.
//
// Start-up is mostly compiling. Node ≥ 22.1 keeps compiled code itself
// (module.enableCompileCache); Node 20 does not, so the app runs as a vm.Script from the V8
// code cache the build wrote. V8 checks a cache against the source's length only, so the
// cache is named after what the build wrote (the file's size and mtime), the Node version and
// the V8 flags, and offered only to that: hashing the app at every start cost more than the
// cache saved a monitor loop, and a cache of another Node is not even read. A cache V8 still
// refuses costs time, never a start. Nothing here writes.
'use strict';
const { existsSync, readFileSync, statSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const APP = path.join(__dirname, '..', 'dist', 'app.cjs');
/** The code caches of the library bundles (dist/lib/) the build made one for: those an inventory read loads. */
const LIB_CACHES = path.join(__dirname, '..', 'dist', 'cache');

/** The flags V8 compiles under: this process's own (not `-e`'s script) and NODE_OPTIONS. */
function v8Flags() {
  const flags = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (['-e', '--eval', '-p', '--print'].includes(argv[i])) i++;
    else if (!/^(-e|--eval|-p|--print)=/.test(argv[i])) flags.push(argv[i]);
  }
  return [...flags, process.env.NODE_OPTIONS ?? ''].join(' ').trim();
}

/** FNV-1a of a short string: a file-name-safe digest of the flags without loading node:crypto. */
function fnv1a(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/**
 * What a cache is made for: the file as the build wrote it (a rebuild, an edit or a copy
 * changes its mtime), the Node version and the V8 flags.
 */
function cacheKey(file = APP) {
  const stat = statSync(file);
  const flags = v8Flags();
  return `${stat.size}-${Math.round(stat.mtimeMs)}-${process.version}${flags ? `-${fnv1a(flags)}` : ''}`;
}

/** `source` compiled as `file`, from the cache at `cache` when `useCache` and it is there. */
function compile(source, file, cache, useCache) {
  let cachedData;
  try {
    if (useCache) cachedData = readFileSync(cache);
  } catch {
    cachedData = undefined; // none: compile
  }
  const script = new vm.Script(source, { filename: file, cachedData });
  return { script, cacheUsed: cachedData !== undefined && !script.cachedDataRejected };
}

/** Where the build puts the code cache of dist/lib/<name>, for the file as it is now. */
function libCache(name) {
  const key = cacheKey(path.join(path.dirname(APP), 'lib', name));
  return { key, file: path.join(LIB_CACHES, `${name}.${key}.cache`) };
}

/**
 * Runs the library bundle dist/lib/<name> as Node's require would (a CommonJS module, once),
 * compiled from its code cache when `useCache` and one was made for this file, Node and flags:
 * zod is the largest thing a mesh command compiles before it can read its inventory.
 */
function loadLib(name, { useCache = true } = {}) {
  const file = path.join(path.dirname(APP), 'lib', name);
  const cache = libCache(name);
  const source = Module.wrap(readFileSync(file, 'utf8'));
  const { script, cacheUsed } = compile(source, file, cache.file, useCache);
  const module = { exports: {}, filename: file, id: file, loaded: false };
  script.runInThisContext()(module.exports, Module.createRequire(file), module, file, path.dirname(file));
  module.loaded = true;
  return { exports: module.exports, script, key: cache.key, cacheUsed };
}

/** Compiles dist/app.cjs (from its cache when `useCache` and one was made for this file, Node and flags). */
function loadApp({ useCache = true, ui } = {}) {
  const key = cacheKey();
  const { script, cacheUsed } = compile(
    readFileSync(APP).toString('utf8'),
    APP,
    `${APP}.${key}.cache`,
    useCache,
  );
  const module = { exports: {} };
  const nodeRequire = Module.createRequire(APP);
  const libs = new Map();
  const require = (id) => {
    if (id.startsWith('./lib/')) {
      // A library with a cache of its own runs from it; the others as Node loads them.
      const name = id.slice('./lib/'.length);
      if (!libs.has(name))
        libs.set(name, useCache && existsSync(libCache(name).file) ? loadLib(name).exports : nodeRequire(id));
      return libs.get(name);
    }
    if (id !== 'baton:ui') return nodeRequire(id);
    if (ui === undefined)
      throw new Error(
        'baton: a view was opened without a terminal; Ink is loaded only when stdin and stdout are terminals.',
      );
    return ui;
  };
  script.runInThisContext()(module.exports, require, module, APP, path.dirname(APP));
  return { exports: module.exports, script, key, cacheUsed };
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
module.exports = { loadApp, loadLib }; // for the build, which writes the caches, and test/build
