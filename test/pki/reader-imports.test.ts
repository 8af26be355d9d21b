/**
 * `baton status --json` is polled by monitoring and run over SSH at failover: it reads and
 * checks certificates with node:crypto and the strict DER reader, and must not load the
 * minting library (pkijs, asn1js) or the config file's YAML parser when no file is read.
 * Bytes loaded are where a start-up regression shows first (docs/benchmarks.md), so this watches them.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { packagesLoaded, REGISTER, traceFromLog } from '../bench/lib/load-trace.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const DEPLOYMENT = 'f00dfeed00000000f00dfeed00000000';
const temp = makeTempDir('baton-reader-imports-');
afterAll(() => temp.cleanup());

let flags: string[];
beforeAll(async () => {
  assertBuilt();
  flags = [
    '--deployment',
    DEPLOYMENT,
    '--state-dir',
    path.join(temp.dir, 'state'),
    '--store',
    `file://${path.join(temp.dir, 'store')}`,
  ];
  // A first controller: mints, publishes and installs, so status reads two certificates.
  const sync = await runBaton([...flags, '--no-seal', 'sync', '--first-controller', '--yes'], {
    cwd: temp.dir,
  });
  expect(sync.exitCode, sync.all).toBe(0);
});

/** The packages a traced run loaded: from node_modules, or inside one of the build's bundles. */
const packagesOf = (stderr: string) => packagesLoaded(traceFromLog(stderr));

describe('what status --json loads', () => {
  it('reads both certificates of an in-sync host without loading pkijs, asn1js, zod or yaml', async () => {
    const run = await runBaton([...flags, 'status', '--json'], {
      cwd: temp.dir,
      nodeArgs: ['--import', REGISTER],
    });
    expect(run.exitCode, run.all).toBe(0);
    const report = JSON.parse(run.stdout) as {
      local: { fingerprint?: string };
      published: { fingerprint?: string };
    };
    expect(report.local.fingerprint).toMatch(/^SHA256:/);
    expect(report.published.fingerprint).toBe(report.local.fingerprint);
    const packages = packagesOf(run.stderr);
    // The trace must see the bundle at all, or "nothing loaded" would pass vacuously.
    expect(packages).toContain('commander');
    for (const heavy of ['pkijs', 'asn1js', 'zod', 'js-yaml']) expect(packages).not.toContain(heavy);
  });

  it('loads the YAML parser, and still not zod, when a config file is read', async () => {
    const config = path.join(temp.dir, 'baton.yaml');
    writeFileSync(config, `deployment: ${DEPLOYMENT}\n`);
    const run = await runBaton(['--config', config, ...flags.slice(2), 'status', '--json'], {
      cwd: temp.dir,
      nodeArgs: ['--import', REGISTER],
    });
    expect(run.exitCode, run.all).toBe(0);
    const packages = packagesOf(run.stderr);
    expect(packages).toContain('js-yaml');
    for (const heavy of ['pkijs', 'asn1js', 'zod']) expect(packages).not.toContain(heavy);
  });
});
