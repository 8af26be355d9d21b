/**
 * The app, React, and Ink with yoga, ship as CommonJS bundles run from V8 code caches
 * (scripts/build.mjs, scripts/package-bundles.mjs, scripts/bundle-runtime.mjs). A cache must
 * be used for the bundle it was made from and NEVER for other content: V8 itself only
 * compares lengths.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';

const DIST = path.join(path.dirname(BIN), '..', 'dist');
const RUNTIME = path.resolve(import.meta.dirname, '../../scripts/bundle-runtime.mjs');
const temp = makeTempDir('baton-bundles-');
afterAll(() => temp.cleanup());

const bundles: { react?: string; ink?: string; app?: string } = {};
let meta: { outputs: Record<string, { inputs: Record<string, unknown> }> };
beforeAll(() => {
  assertBuilt();
  // The ones this build wrote (older builds may have left others in dist/): its metafile names them.
  meta = JSON.parse(readFileSync(path.join(DIST, 'build-meta.json'), 'utf8')) as typeof meta;
  const named = new Set(Object.keys(meta.outputs).map((output) => path.basename(output)).filter((name) => /^(ui-react|ui-ink|app)-[0-9a-f]{12}\.cjs$/.test(name)));
  for (const name of named) bundles[name.startsWith('ui-react-') ? 'react' : name.startsWith('ui-ink-') ? 'ink' : 'app'] = path.join(DIST, name);
  expect([...named].length, `the build wrote ${[...named].join(', ')}`).toBe(3);
  // dist/baton.js runs this build's app, and the app loads exactly this build's package bundles
  expect(readFileSync(path.join(DIST, 'baton.js'), 'utf8')).toContain(`"${path.basename(bundles.app!)}"`);
  const packageBundles = Object.keys(meta.outputs).map((output) => path.basename(output)).filter((name) => /^(ui|lib)-[a-z-]+-[0-9a-f]{12}\.cjs$/.test(name));
  const loaded = [...readFileSync(bundles.app!, 'utf8').matchAll(/"((?:ui|lib)-[a-z-]+-[0-9a-f]{12}\.cjs)"/g)].map((m) => m[1]!);
  expect(new Set(loaded)).toEqual(new Set(packageBundles));
});

interface Loaded {
  readonly react: boolean;
  readonly ink: boolean;
  readonly frame: string;
}

/** Loads both bundles in a fresh Node, draws one frame, and says which cache was used. */
async function load(react: string, ink: string): Promise<Loaded> {
  const script = `import { fromReactBundle, runCachedBundle } from ${JSON.stringify(RUNTIME)};
import { PassThrough } from 'node:stream';
const react = runCachedBundle(${JSON.stringify(react)});
const ink = runCachedBundle(${JSON.stringify(ink)}, { modules: fromReactBundle(react.exports) });
const out = Object.assign(new PassThrough(), { columns: 40, rows: 10, isTTY: true });
let frame = '';
out.on('data', (d) => (frame += d));
const h = react.exports.react.createElement;
const app = ink.exports.ink.render(h(ink.exports.ink.Box, { borderStyle: 'round' }, h(ink.exports.ink.Text, null, 'in sync ✓')), { stdout: out, patchConsole: false });
app.unmount();
await app.waitUntilExit();
console.log(JSON.stringify({ react: react.cacheUsed, ink: ink.cacheUsed, frame }));`;
  const run = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false, env: { FORCE_COLOR: '0' } });
  expect(run.exitCode, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Loaded;
}

const copied = (file: string) => {
  const copy = path.join(temp.dir, path.basename(file));
  copyFileSync(file, copy);
  return copy;
};

describe('the UI bundles and their code caches', () => {
  it('run from the caches the build made for them, and draw', async () => {
    const loaded = await load(bundles.react!, bundles.ink!);
    expect({ react: loaded.react, ink: loaded.ink }).toEqual({ react: true, ink: true });
    expect(loaded.frame).toMatch(/│in sync ✓ *│/);
  });

  it('compile without a cache when there is none, and draw the same', async () => {
    const loaded = await load(copied(bundles.react!), copied(bundles.ink!));
    expect({ react: loaded.react, ink: loaded.ink }).toEqual({ react: false, ink: false });
    expect(loaded.frame).toMatch(/│in sync ✓ *│/);
  });

  it('never use a cache for content of the same length that is not what it was made from', async () => {
    // V8 would take it (it compares lengths) and run the old code: the runtime must not offer it.
    const source = readFileSync(bundles.ink!, 'utf8');
    const message = 'yoga-layout did not start synchronously';
    const changed = source.replace(message, message.toUpperCase());
    expect(changed.length).toBe(source.length);
    expect(changed).not.toBe(source);
    const copy = path.join(temp.dir, path.basename(bundles.ink!));
    writeFileSync(copy, changed);
    copyFileSync(`${bundles.ink!}.cache`, `${copy}.cache`);
    const loaded = await load(bundles.react!, copy);
    expect({ react: loaded.react, ink: loaded.ink }).toEqual({ react: true, ink: false });
  });

  it('hold React once and Ink once: no other output of the build carries them', () => {
    const holders = (pattern: RegExp) =>
      Object.entries(meta.outputs)
        .filter(([, output]) => Object.keys(output.inputs).some((input) => pattern.test(input)))
        .map(([file]) => path.basename(file));
    expect(holders(/node_modules\/react\//)).toEqual([path.basename(bundles.react!)]);
    expect(holders(/node_modules\/(ink|react-reconciler|yoga-layout|chalk)\//)).toEqual([path.basename(bundles.ink!)]);
  });
});

describe('the app bundle and the package bundles', () => {
  it('run the app from the code cache the build made for it', async () => {
    const script = `import { runCachedBundle } from ${JSON.stringify(RUNTIME)};
const app = runCachedBundle(${JSON.stringify(bundles.app!)});
console.log(JSON.stringify({ cacheUsed: app.cacheUsed, main: typeof app.exports.main }));`;
    const run = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ cacheUsed: true, main: 'function' });
  });

  it('compile without the cache when V8 refuses it (other V8 flags), and the bin still answers', async () => {
    // V8 refuses a cache made under other flags: an operator's NODE_OPTIONS must cost time, never a start.
    const script = `import { runCachedBundle } from ${JSON.stringify(RUNTIME)};
console.log(JSON.stringify({ cacheUsed: runCachedBundle(${JSON.stringify(bundles.app!)}).cacheUsed }));`;
    const refused = await execa(process.execPath, ['--no-opt', '--input-type=module', '-e', script], { reject: false });
    expect(refused.exitCode, refused.stderr).toBe(0);
    expect(JSON.parse(refused.stdout)).toEqual({ cacheUsed: false });
    const help = await execa(process.execPath, ['--no-opt', BIN, '--help'], { reject: false });
    expect(help.exitCode, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: baton/m);
    expect(help.stdout).toMatch(/^\s+status\b/m);
  });

  it('hold each library in one bundle of its own, which the app does not carry again', () => {
    const holders = (name: string) =>
      Object.entries(meta.outputs)
        .filter(([, output]) => Object.keys(output.inputs).some((input) => input.startsWith(`node_modules/${name}/`)))
        .map(([file]) => path.basename(file).replace(/-[0-9a-f]{12}\.cjs$/, ''));
    const expected = { pkijs: 'lib-pki', asn1js: 'lib-pki', execa: 'lib-execa', pg: 'lib-pg', zod: 'lib-zod', yaml: 'lib-yaml', 'js-yaml': 'lib-js-yaml', '@aws-sdk/client-s3': 'lib-s3' };
    for (const [name, bundle] of Object.entries(expected)) expect(holders(name), name).toEqual([bundle]);
    // commander is the app's own: every command starts by parsing its arguments
    expect(holders('commander')).toEqual(['app']);
  });
});
