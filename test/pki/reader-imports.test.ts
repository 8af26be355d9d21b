/**
 * `baton status --json` is polled by monitoring and run over SSH at failover: it reads and
 * checks certificates with node:crypto and the strict DER reader, and must not load the
 * minting library (pkijs, asn1js) or the config file's YAML parser when no file is read.
 * Bytes loaded are where a start-up regression shows first (issue 7), so this watches them.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';

const DEPLOYMENT = 'f00dfeed00000000f00dfeed00000000';
const temp = makeTempDir('baton-reader-imports-');
afterAll(() => temp.cleanup());

let register: string;
let flags: string[];
beforeAll(async () => {
  assertBuilt();
  const hooks = path.join(temp.dir, 'hooks.mjs');
  register = path.join(temp.dir, 'register.mjs');
  writeFileSync(hooks, "import { writeSync } from 'node:fs';\nexport async function load(u, c, next) { const r = await next(u, c); writeSync(2, `\\nLOADED ${u}\\n`); return r; }\n");
  // ESM loads go through the hook; CommonJS ones (a createRequire'd package) are listed from
  // the require cache at exit.
  writeFileSync(
    register,
    [
      "import { createRequire, register } from 'node:module';",
      "import { writeSync } from 'node:fs';",
      "import { pathToFileURL } from 'node:url';",
      `register(${JSON.stringify(`file://${hooks}`)});`,
      'const require = createRequire(import.meta.url);',
      "process.on('exit', () => { for (const f of Object.keys(require.cache)) writeSync(2, `\\nLOADED ${pathToFileURL(f).href}\\n`); });",
      '',
    ].join('\n'),
  );
  flags = ['--deployment', DEPLOYMENT, '--state-dir', path.join(temp.dir, 'state'), '--store', `file://${path.join(temp.dir, 'store')}`];
  // A first controller: mints, publishes and installs, so status reads two certificates.
  const sync = await runBaton([...flags, 'sync', '--yes'], { cwd: temp.dir });
  expect(sync.exitCode, sync.all).toBe(0);
});

/** The packages each loaded file carries: a node_modules path, or a bundle chunk's inputs. */
function packagesLoaded(stderr: string): Set<string> {
  const metaFile = path.join(path.dirname(BIN), '..', 'dist', 'build-meta.json');
  const meta = existsSync(metaFile)
    ? (JSON.parse(readFileSync(metaFile, 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> })
    : { outputs: {} };
  const buildRoot = path.dirname(path.dirname(metaFile));
  const inputsOf = new Map(Object.entries(meta.outputs).map(([output, { inputs }]) => [path.resolve(buildRoot, output), Object.keys(inputs)]));
  const packages = new Set<string>();
  const packageOf = (file: string) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
  for (const match of stderr.matchAll(/^LOADED (file:\S+)$/gm)) {
    const file = fileURLToPath(match[1]!);
    for (const source of [file, ...(inputsOf.get(file) ?? [])]) {
      const name = packageOf(source);
      if (name) packages.add(name);
    }
  }
  return packages;
}

describe('what status --json loads', () => {
  it('reads both certificates of an in-sync host without loading pkijs, asn1js, zod or yaml', async () => {
    const run = await runBaton([...flags, 'status', '--json'], { cwd: temp.dir, nodeArgs: ['--import', register] });
    expect(run.exitCode, run.all).toBe(0);
    const report = JSON.parse(run.stdout) as { local: { fingerprint?: string }; published: { fingerprint?: string } };
    expect(report.local.fingerprint).toMatch(/^SHA256:/);
    expect(report.published.fingerprint).toBe(report.local.fingerprint);
    const packages = packagesLoaded(run.stderr);
    // The trace must see the bundle at all, or "nothing loaded" would pass vacuously.
    expect(packages).toContain('commander');
    for (const heavy of ['pkijs', 'asn1js', 'zod', 'yaml']) expect(packages).not.toContain(heavy);
  });

  it('loads the YAML parser, and still not zod, when a config file is read', async () => {
    const config = path.join(temp.dir, 'baton.yaml');
    writeFileSync(config, `deployment: ${DEPLOYMENT}\n`);
    const run = await runBaton(['--config', config, ...flags.slice(2), 'status', '--json'], { cwd: temp.dir, nodeArgs: ['--import', register] });
    expect(run.exitCode, run.all).toBe(0);
    const packages = packagesLoaded(run.stderr);
    expect(packages).toContain('yaml');
    for (const heavy of ['pkijs', 'asn1js', 'zod']) expect(packages).not.toContain(heavy);
  });
});
