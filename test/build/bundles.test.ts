/**
 * What `npm run build` ships (docs/build.md): dist/app.cjs run by bin/baton.js from a V8 code
 * cache made for that very content, the libraries in dist/lib/, Ink and React in dist/ui/ui.mjs.
 * A cache must NEVER be offered to other content: V8 itself compares only lengths.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';

const ROOT = path.join(path.dirname(BIN), '..');
const DIST = path.join(ROOT, 'dist');
const temp = makeTempDir('baton-bundles-');
afterAll(() => temp.cleanup());

type Outputs = Record<string, { inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }>;
let outputs: Outputs;
beforeAll(() => {
  assertBuilt();
  outputs = (JSON.parse(readFileSync(path.join(DIST, 'build-meta.json'), 'utf8')) as { outputs: Outputs })
    .outputs;
});

/** Runs `script` (CommonJS) in a fresh Node with `nodeArgs`; its stdout parsed as JSON. */
async function inNode(script: string, nodeArgs: readonly string[] = []): Promise<Record<string, unknown>> {
  const run = await execa(process.execPath, [...nodeArgs, '-e', script], {
    reject: false,
    env: { FORCE_COLOR: '0' },
  });
  expect(run.exitCode, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
const loadApp = (bin: string) => `const app = require(${JSON.stringify(bin)}).loadApp();
console.log(JSON.stringify({ cacheUsed: app.cacheUsed, main: typeof app.exports.main }));`;

/** A copy of bin/ and dist/ whose app.cjs `change` rewrites; its bin. */
function copyWith(change: (app: string) => string): string {
  const dir = path.join(temp.dir, `copy-${readdirSync(temp.dir).length}`);
  mkdirSync(dir);
  cpSync(path.join(ROOT, 'bin'), path.join(dir, 'bin'), { recursive: true });
  cpSync(DIST, path.join(dir, 'dist'), { recursive: true });
  const app = path.join(dir, 'dist', 'app.cjs');
  writeFileSync(app, change(readFileSync(app, 'utf8')));
  return path.join(dir, 'bin', 'baton.js');
}

describe('the app and its code cache', () => {
  it('runs from the cache the build made for it', async () => {
    expect(await inNode(loadApp(BIN))).toEqual({ cacheUsed: true, main: 'function' });
  });

  it('is never offered the cache for content of the same length that is not what it was made from', async () => {
    const source = readFileSync(path.join(DIST, 'app.cjs'), 'utf8');
    const changedBin = copyWith((app) =>
      app.replace('a lock is busy (the authority lock', 'a lock is BUSY (the authority lock'),
    );
    const changed = readFileSync(path.join(path.dirname(changedBin), '..', 'dist', 'app.cjs'), 'utf8');
    expect(changed.length).toBe(source.length);
    expect(changed).not.toBe(source);
    // The old cache is still there under its name; the runtime looks for the new content's.
    const cache = readdirSync(path.join(path.dirname(changedBin), '..', 'dist')).filter((name) =>
      name.endsWith('.cache'),
    );
    expect(cache).toHaveLength(1);
    expect(await inNode(loadApp(changedBin))).toEqual({ cacheUsed: false, main: 'function' });
  });

  it('is offered to this Node version only: the cache is named after it, and renamed for another it is not read', async () => {
    const names = readdirSync(DIST).filter((name) => name.endsWith('.cache'));
    expect(names).toHaveLength(1);
    expect(names[0]).toContain(`-${process.version}`);
    const bin = copyWith((app) => app);
    const dist = path.join(path.dirname(bin), '..', 'dist');
    const key = `${statSync(path.join(dist, 'app.cjs')).size}-${Math.round(statSync(path.join(dist, 'app.cjs')).mtimeMs)}`;
    // The copy's own key, with another Node's version: what a cache made under Node 22 would be called.
    writeFileSync(path.join(dist, `app.cjs.${key}-v22.0.0.cache`), readFileSync(path.join(DIST, names[0]!)));
    expect(await inNode(loadApp(bin))).toEqual({ cacheUsed: false, main: 'function' });
    renameSync(
      path.join(dist, `app.cjs.${key}-v22.0.0.cache`),
      path.join(dist, `app.cjs.${key}-${process.version}.cache`),
    );
    expect(await inNode(loadApp(bin))).toEqual({ cacheUsed: true, main: 'function' });
  });

  it('starts without node:crypto: nothing is hashed to find the cache', async () => {
    const script = `process.argv = ['node', 'baton', '--help'];
const out = process.stdout.write.bind(process.stdout);
process.stdout.write = () => true;
require(${JSON.stringify(BIN)}).loadApp().exports.main(process.argv).then(() => {
  out(JSON.stringify({ crypto: process.moduleLoadList.filter((m) => /crypto/.test(m)) }));
});`;
    // A file, not `node -e`: Node's eval path loads node:crypto itself.
    const file = path.join(temp.dir, 'start-without-crypto.cjs');
    writeFileSync(file, script);
    const run = await execa(process.execPath, [file], { reject: false, env: { FORCE_COLOR: '0' } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ crypto: [] });
  });

  it('compiles without the cache when V8 refuses it (other V8 flags), and the bin still answers', async () => {
    expect(await inNode(loadApp(BIN), ['--no-opt'])).toEqual({ cacheUsed: false, main: 'function' });
    const help = await execa(process.execPath, ['--no-opt', BIN, '--help'], { reject: false });
    expect(help.exitCode, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: baton/m);
    expect(help.stdout).toMatch(/^\s+status\b/m);
  });
});

describe('the library bundles an inventory read loads, and their code caches', () => {
  const loadLibs = (bin: string) => `const { loadLib } = require(${JSON.stringify(bin)});
const [zod, yaml] = ['zod.cjs', 'yaml.cjs'].map((name) => loadLib(name));
console.log(JSON.stringify({
  cacheUsed: [zod.cacheUsed, yaml.cacheUsed],
  zod: zod.exports.zod.object({ a: zod.exports.zod.string() }).safeParse({ a: 'x' }).success,
  yaml: yaml.exports['js-yaml'].load('a: 1').a,
}));`;

  it('run zod and js-yaml from the caches the build made for them, and answer as required ones do', async () => {
    expect(
      readdirSync(path.join(DIST, 'cache'))
        .map((name) => name.split('.')[0])
        .sort(),
    ).toEqual(['yaml', 'zod']);
    expect(await inNode(loadLibs(BIN))).toEqual({ cacheUsed: [true, true], zod: true, yaml: 1 });
  });

  it('never offer a cache to a library of the same length that is not what it was made from', async () => {
    const bin = copyWith((app) => app);
    const zod = path.join(path.dirname(bin), '..', 'dist', 'lib', 'zod.cjs');
    const source = readFileSync(zod, 'utf8');
    const changed = source.replace('Invalid input to extend', 'INVALID input to extend');
    expect(changed.length).toBe(source.length);
    expect(changed).not.toBe(source);
    writeFileSync(zod, changed);
    // The copied caches are there under the build's names; the runtime looks for the copy's.
    const caches = path.join(path.dirname(bin), '..', 'dist', 'cache');
    expect(readdirSync(caches)).toHaveLength(2);
    expect(await inNode(loadLibs(bin))).toEqual({ cacheUsed: [false, false], zod: true, yaml: 1 });
    // Named for the copy's unchanged js-yaml, its cache is offered and taken.
    const yamlFile = path.join(path.dirname(zod), 'yaml.cjs');
    const yamlKey = `${statSync(yamlFile).size}-${Math.round(statSync(yamlFile).mtimeMs)}-${process.version}`;
    const yamlCache = readdirSync(caches).find((name) => name.startsWith('yaml.cjs.'))!;
    renameSync(path.join(caches, yamlCache), path.join(caches, `yaml.cjs.${yamlKey}.cache`));
    expect(await inNode(loadLibs(bin))).toEqual({ cacheUsed: [false, true], zod: true, yaml: 1 });
  });
});

describe('what each output holds', () => {
  const holders = (name: string) =>
    Object.entries(outputs)
      .filter(([, output]) =>
        Object.keys(output.inputs).some((input) => input.startsWith(`node_modules/${name}/`)),
      )
      .map(([file]) => file)
      .filter((file) => !/\/devtools-\w+\.mjs$/.test(file)); // Ink's devtools bridge: its own chunk (below)

  it('holds each library once: commander in the app, the larger ones in dist/lib/, Ink and React in dist/ui/ui.mjs', () => {
    const expected: Record<string, string> = {
      commander: 'dist/app.cjs',
      pkijs: 'dist/lib/pki.cjs',
      asn1js: 'dist/lib/pki.cjs',
      pg: 'dist/lib/pg.cjs',
      zod: 'dist/lib/zod.cjs',
      'js-yaml': 'dist/lib/yaml.cjs',
      '@aws-sdk/client-s3': 'dist/lib/s3.cjs',
      '@aws-sdk/client-ssm': 'dist/lib/ssm.cjs',
      ink: 'dist/ui/ui.mjs',
      react: 'dist/ui/ui.mjs',
      'yoga-layout': 'dist/ui/ui.mjs',
    };
    for (const [name, file] of Object.entries(expected)) expect(holders(name), name).toEqual([file]);
  });

  it('loads the libraries from the files the build wrote', () => {
    const app = readFileSync(path.join(DIST, 'app.cjs'), 'utf8');
    const required = new Set([...app.matchAll(/require\("\.\/lib\/([a-z0-9]+\.cjs)"\)/g)].map((m) => m[1]!));
    expect(required).toEqual(new Set(readdirSync(path.join(DIST, 'lib'))));
  });
});

describe('the UI bundle', () => {
  it('draws a frame with the app’s React: one React, loaded as the bin loads it', async () => {
    const script = `import(${JSON.stringify(path.join(DIST, 'ui', 'ui.mjs'))}).then(async ({ ink, react, jsxRuntime }) => {
  const { PassThrough } = require('node:stream');
  const out = Object.assign(new PassThrough(), { columns: 40, rows: 10, isTTY: true });
  let frame = '';
  out.on('data', (d) => (frame += d));
  const app = ink.render(jsxRuntime.jsx(ink.Box, { borderStyle: 'round', children: react.createElement(ink.Text, null, 'in sync ✓') }), { stdout: out, patchConsole: false });
  app.unmount();
  await app.waitUntilExit();
  console.log(JSON.stringify({ frame }));
});`;
    const { frame } = await inNode(script);
    expect(frame).toMatch(/│in sync ✓ *│/);
  });

  it('leaves Ink’s devtools bridge (a package baton does not install) to a chunk loaded only under DEV=true', () => {
    const ui = outputs['dist/ui/ui.mjs']!;
    const bridge = Object.keys(outputs).filter((file) =>
      outputs[file]!.imports.some((i) => i.path === 'react-devtools-core'),
    );
    expect(bridge).toHaveLength(1);
    expect(ui.imports.find((i) => i.path === bridge[0])?.kind).toBe('dynamic-import');
  });
});
