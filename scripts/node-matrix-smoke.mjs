#!/usr/bin/env node
/**
 * Runs the BUILT tree on other Node.js majors (default 22 and 24; the `node` npm package ships
 * their binaries, fetched once by npx). `npm run build` first.
 *
 *   node scripts/node-matrix-smoke.mjs [--rebuild] [MAJOR…]
 *
 * The tree as installed (fs-ext built by npm for the Node.js that ran `npm ci`) is what an
 * operator who switched Node.js runs: `--version` and `status` work, and a command that takes a
 * lock (`sync`) exits 1 naming the module, the Node.js it was built for, the one running, and
 * `npm rebuild fs-ext` — having written nothing but its empty lock file.
 *
 * `--rebuild` then copies the tree to a temp dir, rebuilds fs-ext there for that Node.js
 * (`npm rebuild fs-ext`: node-gyp fetches that version's headers from nodejs.org, so it needs
 * that network) and runs what needs it: `sync --first-controller` (the authority lock taken and
 * released), `status`, `sync` again (the lock free again), and `mesh rotate` on the local
 * transport (the mesh lock and the provider lock), its receipts written by this script.
 * Exits 1 on the first check that fails, naming it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const rebuild = args.includes('--rebuild');
const majors = args.filter((a) => /^\d+$/.test(a));
if (majors.length === 0) majors.push('22', '24');
const started = Date.now();
const tmp = mkdtempSync(path.join(tmpdir(), 'baton-node-matrix-'));

function fail(what) {
  console.error(`node-matrix-smoke: ${what}`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(1);
}

/** The binary of Node.js `major`: npx fetches the `node` package once, then finds it offline. */
function nodeBinary(major) {
  const r = spawnSync(
    'npx',
    ['--prefer-offline', '-y', '-p', `node@${major}`, 'node', '-p', 'process.execPath'],
    {
      cwd: tmp,
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) fail(`npx could not provide node@${major}: ${r.stderr.trim().split('\n').pop()}`);
  return r.stdout.trim();
}

function run(node, tree, cwd, argv) {
  const r = spawnSync(node, [path.join(tree, 'bin', 'baton.js'), ...argv], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 30_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function expectRun(label, result, codes, contains = []) {
  if (!codes.includes(result.code))
    fail(`${label}: exit ${result.code}, wanted ${codes.join(' or ')}\n${result.out}`);
  for (const words of contains)
    if (!result.out.includes(words)) fail(`${label}: the output does not say "${words}"\n${result.out}`);
  console.log(`  ✓ ${label} (exit ${result.code})`);
}

/** A fresh fleet: its own state dir, file:// store and deployment id. */
function fleet(dir) {
  mkdirSync(path.join(dir, 'store'), { recursive: true, mode: 0o700 });
  return [
    '--no-seal',
    '--deployment',
    randomBytes(16).toString('hex'),
    '--state-dir',
    path.join(dir, 'state'),
    '--store',
    `file://${path.join(dir, 'store')}`,
  ];
}

/** The tree as installed: what runs, and what is refused in which words. */
function asInstalled(major, node, modules) {
  const dir = path.join(tmp, `as-installed-${major}`);
  const global = fleet(dir);
  expectRun(`node ${major}: --version`, run(node, REPO, dir, ['--version']), [0]);
  expectRun(`node ${major}: status`, run(node, REPO, dir, [...global, 'status']), [0, 3]);
  expectRun(
    `node ${major}: sync names the native module`,
    run(node, REPO, dir, [...global, 'sync', '--first-controller', '--yes']),
    [1],
    ['The native module fs-ext was built for', `NODE_MODULE_VERSION ${modules}`, 'npm rebuild fs-ext'],
  );
  const state = readdirSync(path.join(dir, 'state'));
  if (state.join() !== 'ca.lock' || statSync(path.join(dir, 'state', 'ca.lock')).size !== 0)
    fail(`node ${major}: the refused sync left ${state.join(', ')} in its state dir`);
  console.log(`  ✓ node ${major}: the refused sync wrote nothing but its empty lock file`);
}

/** A copy of the built tree whose fs-ext is rebuilt for `node`; the other packages are linked. */
function rebuiltTree(major, node) {
  const tree = path.join(tmp, `tree-${major}`);
  for (const part of ['bin', 'dist', 'package.json'])
    cpSync(path.join(REPO, part), path.join(tree, part), { recursive: true });
  const modules = path.join(tree, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(path.join(REPO, 'node_modules')))
    if (name !== 'fs-ext' && name !== '.bin')
      symlinkSync(path.join(REPO, 'node_modules', name), path.join(modules, name));
  cpSync(path.join(REPO, 'node_modules', 'fs-ext'), path.join(modules, 'fs-ext'), { recursive: true });
  const r = spawnSync('npm', ['rebuild', 'fs-ext', '--foreground-scripts'], {
    cwd: tree,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}` },
    timeout: 300_000,
  });
  if (r.status !== 0)
    fail(
      `node ${major}: npm rebuild fs-ext failed (node-gyp needs node ${major}'s headers from nodejs.org):\n${`${r.stdout}${r.stderr}`.trim().split('\n').slice(-6).join('\n')}`,
    );
  // node-gyp builds against whatever headers it finds (a distro's /usr/include/node, say): a
  // rebuild that "succeeded" for another ABI is checked here, not discovered by the lock below.
  const load = spawnSync(node, ['-e', `require(${JSON.stringify(path.join(modules, 'fs-ext'))})`], {
    encoding: 'utf8',
  });
  if (load.status !== 0)
    fail(
      `node ${major}: npm rebuild fs-ext built it for another Node.js (node-gyp found no headers for node ${major}):\n${load.stderr.trim().split('\n').slice(0, 4).join('\n')}`,
    );
  console.log(`  ✓ node ${major}: fs-ext rebuilt in ${tree}`);
  return tree;
}

/** Receipts for every delivered provider file, as a provisioner that has always just run. */
function receiptWriter(providerDir) {
  const timer = setInterval(() => {
    let names;
    try {
      names = readdirSync(providerDir);
    } catch {
      return;
    }
    for (const role of names) {
      if (role.startsWith('.') || role.includes('.next')) continue;
      const file = path.join(providerDir, role);
      if (!statSync(file, { throwIfNoEntry: false })?.isFile()) continue;
      const digest = `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;
      const receipt = path.join(providerDir, '.applied', role);
      if (existsSync(receipt) && readFileSync(receipt, 'utf8').includes(digest)) continue;
      mkdirSync(path.dirname(receipt), { recursive: true, mode: 0o700 });
      writeFileSync(receipt, `${JSON.stringify({ role, digest, applied_at: new Date().toISOString() })}\n`, {
        mode: 0o600,
      });
    }
  }, 20);
  return () => clearInterval(timer);
}

async function rebuilt(major, node) {
  const tree = rebuiltTree(major, node);
  const dir = path.join(tmp, `rebuilt-${major}`);
  const global = fleet(dir);
  expectRun(
    `node ${major}: sync --first-controller (the authority lock taken)`,
    run(node, tree, dir, [...global, 'sync', '--first-controller', '--yes']),
    [0],
  );
  expectRun(`node ${major}: status`, run(node, tree, dir, [...global, 'status']), [0]);
  expectRun(
    `node ${major}: sync again (the lock was released)`,
    run(node, tree, dir, [...global, 'sync']),
    [0],
  );
  const machines = ['db1', 'web1'];
  for (const m of machines) mkdirSync(path.join(dir, 'machines', m), { recursive: true });
  writeFileSync(
    path.join(dir, 'mesh.yaml'),
    [
      'machines:',
      ...machines.map((m) => `  - { name: ${m}, address: machines/${m}, transport: local }`),
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      '  - { name: web1-app, machine: web1, uses: [pg-main] }',
      '',
    ].join('\n'),
  );
  const stop = receiptWriter(path.join(dir, 'machines', 'db1', 'var/lib/baton/mesh/provides/pg-main'));
  // Spawned, not spawnSync: the receipt writer runs on this process's timers while it waits.
  const rotation = await runAsync(node, tree, dir, [
    ...global,
    'mesh',
    'rotate',
    '--provider',
    'pg-main',
    '--inventory',
    path.join(dir, 'mesh.yaml'),
    '--yes',
    '--wait',
    '20',
  ]).finally(stop);
  expectRun(`node ${major}: mesh rotate on the local transport`, rotation, [0]);
  const delivered = readFileSync(
    path.join(dir, 'machines', 'web1', 'var/lib/baton/mesh/consumes/pg-main/web1_app'),
  );
  if (
    !delivered.equals(
      readFileSync(path.join(dir, 'machines', 'db1', 'var/lib/baton/mesh/provides/pg-main/web1_app')),
    )
  )
    fail(`node ${major}: the rotation left the two ends of web1_app different`);
  console.log(`  ✓ node ${major}: both ends hold the same new secret`);
}

function runAsync(node, tree, cwd, argv) {
  return new Promise((resolve) => {
    const child = spawn(node, [path.join(tree, 'bin', 'baton.js'), ...argv], {
      cwd,
      env: { ...process.env, NO_COLOR: '1' },
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

for (const major of majors) {
  const node = nodeBinary(major);
  const modules = execFileSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim();
  console.log(
    `node ${major}: ${node} (NODE_MODULE_VERSION ${modules}; this tree's fs-ext: built under ${process.version})`,
  );
  // The Node.js that built the tree (a check of --rebuild itself) has nothing to refuse.
  if (modules !== process.versions.modules) asInstalled(major, node, modules);
  else console.log(`  - node ${major}: the same NODE_MODULE_VERSION as this tree's: nothing to refuse`);
  if (rebuild) await rebuilt(major, node);
}
rmSync(tmp, { recursive: true, force: true });
console.log(
  `node-matrix-smoke: ${majors.join(', ')} passed in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
