/**
 * The BUILT CLI against moto_server (preconditions enforced), run as a script runs it (no
 * terminal): flags mean one thing, every refusal names a command that works from this host
 * (with the global flags given), a refused run creates nothing, and status and sync agree.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { assertBuilt, runBaton, type BatonRun } from '../helpers/run-baton.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'ef56ef56ef56ef56ef56ef56ef56ef56';
const bytes = (text: string) => new TextEncoder().encode(text);

let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  assertBuilt();
  moto = await startMoto();
  tmp = makeTempDir('baton-flags-');
}, 120_000);

afterAll(async () => {
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

interface World {
  readonly bucket: string;
  readonly prefix: string;
  readonly key: string;
  readonly url: string;
  dir(name: string): string;
  baton(stateDir: string, args: readonly string[], extra?: readonly string[]): Promise<BatonRun>;
}

async function world(): Promise<World> {
  const bucket = await moto.bucket();
  const prefix = `w${++seq}`;
  const url = moto.storeUrl(bucket, prefix);
  return {
    bucket,
    prefix,
    key: `${prefix}/authority.json`,
    url,
    dir: (name) => path.join(tmp.dir, `${prefix}-${name}`),
    baton: (stateDir, args, extra = []) =>
      runBaton(
        [
          ...(extra.length > 0 ? extra : ['--no-seal']),
          '--deployment',
          DEPLOYMENT,
          '--state-dir',
          stateDir,
          '--store',
          url,
          ...args,
        ],
        { env: moto.env },
      ),
  };
}

const objectOf = async (w: World) => (await moto.getObject(w.bucket, w.key))?.etag;

describe('flags mean one thing (exit 2 elsewhere, naming the verdict and what sync would have done)', () => {
  it('--force with nothing published exits 2, publishes nothing, and creates no state dir', async () => {
    const w = await world();
    const stateDir = w.dir('fresh');
    const run = await w.baton(stateDir, ['sync', '--force', '--yes']);
    expect(run.exitCode, run.all).toBe(2);
    expect(run.stderr).toContain('--force applies only when sync refuses');
    expect(run.stderr).toContain('it can be the first controller');
    expect(run.stderr).toContain('minting a first authority is asked for with --first-controller only');
    expect(existsSync(stateDir)).toBe(false);
    expect(await objectOf(w)).toBeUndefined();
  });

  it('--push on a fresh host exits 2 instead of adopting, and creates nothing', async () => {
    const w = await world();
    expect((await w.baton(w.dir('first'), ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    const etag = await objectOf(w);
    const stateDir = w.dir('fresh');
    const run = await w.baton(stateDir, ['sync', '--push']);
    expect(run.exitCode, run.all).toBe(2);
    expect(run.stderr).toContain(
      '--push applies only when this host holds a different authority than the published one and is not proved behind it',
    );
    expect(run.stderr).toMatch(/sync would adopt the published SHA256:/);
    expect(existsSync(stateDir)).toBe(false);
    expect(await objectOf(w)).toBe(etag);
  });

  it('--force and --replace-unreadable on a host in sync exit 2 and change nothing', async () => {
    const w = await world();
    const stateDir = w.dir('a');
    expect((await w.baton(stateDir, ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    const disk = snapshotDir(stateDir);
    const etag = await objectOf(w);
    for (const flag of ['--force', '--replace-unreadable']) {
      const run = await w.baton(stateDir, ['sync', flag, '--yes']);
      expect(run.exitCode, run.all).toBe(2);
      expect(run.stderr).toContain('in sync');
      expect(run.stderr).toContain('sync would change nothing');
    }
    expect(snapshotDir(stateDir)).toEqual(disk);
    expect(await objectOf(w)).toBe(etag);
  });
});

describe('a way out of an unusable document', () => {
  it('sync names `sync --replace-unreadable --confirm <ETAG 8>` with the flags given; without a terminal it needs that value (not --yes); with it the document is replaced', async () => {
    const w = await world();
    const stateDir = w.dir('a');
    expect((await w.baton(stateDir, ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    await moto.putObject(w.bucket, w.key, bytes('not json at all'));
    const etag = await objectOf(w);

    const status = await w.baton(stateDir, ['status', '--json']);
    expect(status.exitCode, status.all).toBe(3);
    const json = JSON.parse(status.stdout) as {
      verdict: { next: string; next_step: { args: string[] } };
      published: { etag: string };
    };
    expect(json.verdict.next).toContain(
      `baton --deployment ${DEPLOYMENT} --state-dir ${stateDir} --store '${w.url}' --no-seal sync --replace-unreadable --confirm <ETAG 8>`,
    );
    // args are the rendered command's words after `baton`: the global flags first, then the command.
    expect(json.verdict.next_step.args).toEqual([
      '--deployment',
      DEPLOYMENT,
      '--state-dir',
      stateDir,
      '--store',
      w.url,
      '--no-seal',
      'sync',
      '--replace-unreadable',
      '--confirm',
      '<ETAG 8>',
    ]);
    expect(json.published.etag).toBe(etag!.replace(/"/g, ''));

    const refused = await w.baton(stateDir, ['sync']);
    expect(refused.exitCode, refused.all).toBe(3);
    expect(refused.stderr).toContain(`--state-dir ${stateDir}`);
    expect(refused.stderr).toContain('sync --replace-unreadable');
    expect(refused.stderr).not.toContain('sync --push');

    for (const extra of [[], ['--yes']]) {
      const unconfirmed = await w.baton(stateDir, ['sync', '--replace-unreadable', ...extra]);
      expect(unconfirmed.exitCode, unconfirmed.all).toBe(2);
      expect(unconfirmed.stderr).toContain(
        "--replace-unreadable needs --confirm with the first 8 characters of the bad object's ETag",
      );
    }
    expect(await objectOf(w)).toBe(etag);

    const replaced = await w.baton(stateDir, [
      'sync',
      '--replace-unreadable',
      '--confirm',
      json.published.etag.slice(0, 8),
    ]);
    expect(replaced.exitCode, replaced.all).toBe(0);
    expect((await w.baton(stateDir, ['status', '--json'])).exitCode).toBe(0);
  });

  it('refuses (exit 3) to replace a valid document of another deployment, and a document of a newer format', async () => {
    const w = await world();
    const stateDir = w.dir('a');
    expect((await w.baton(stateDir, ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    const other = await runBaton(
      [
        '--deployment',
        '12341234123412341234123412341234',
        '--no-seal',
        '--state-dir',
        w.dir('other'),
        '--store',
        w.url,
        'sync',
      ],
      { env: moto.env },
    );
    expect(other.exitCode, other.all).toBe(3);
    // Plant another fleet's document the way a misconfigured controller would have.
    await moto.deleteObject(w.bucket, w.key);
    expect(
      (
        await runBaton(
          [
            '--deployment',
            '12341234123412341234123412341234',
            '--no-seal',
            '--state-dir',
            w.dir('other2'),
            '--store',
            w.url,
            'sync',
            '--first-controller',
            '--yes',
          ],
          { env: moto.env },
        )
      ).exitCode,
    ).toBe(0);
    const foreignEtag = await objectOf(w);
    const foreign = await w.baton(stateDir, [
      'sync',
      '--replace-unreadable',
      '--confirm',
      foreignEtag!.replace(/"/g, '').slice(0, 8),
    ]);
    expect(foreign.exitCode, foreign.all).toBe(3);
    expect(foreign.stderr).toContain('another deployment');
    expect(await objectOf(w)).toBe(foreignEtag);

    await moto.putObject(
      w.bucket,
      w.key,
      bytes(JSON.stringify({ format: 'baton.authority/2', deployment: DEPLOYMENT })),
    );
    const newerEtag = await objectOf(w);
    const newer = await w.baton(stateDir, [
      'sync',
      '--replace-unreadable',
      '--confirm',
      newerEtag!.replace(/"/g, '').slice(0, 8),
    ]);
    expect(newer.exitCode, newer.all).toBe(3);
    expect(newer.stderr).toContain('Upgrade baton');
    expect(await objectOf(w)).toBe(newerEtag);
  });
});

describe('status and sync agree, and say what is true', () => {
  it('without a terminal, status suggests the sync that acts (with the global flags), never failover', async () => {
    const w = await world();
    const stateDir = w.dir('fresh');
    const status = await w.baton(stateDir, ['status', '--json'], ['--no-color']);
    expect(status.exitCode, status.all).toBe(3);
    const next = (JSON.parse(status.stdout) as { verdict: { next: string } }).verdict.next;
    expect(next).toBe(
      `baton --deployment ${DEPLOYMENT} --state-dir ${stateDir} --store '${w.url}' sync --first-controller`,
    );
    expect(existsSync(stateDir)).toBe(false);
  });

  it('a sealed document: a host without the key reads its fingerprint, and status and sync both say adopting needs the key', async () => {
    const w = await world();
    const keyFile = path.join(tmp.dir, `seal-${seq}.key`);
    writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
    const config = path.join(tmp.dir, `sealed-${seq}.yaml`);
    writeFileSync(config, `seal_key_file: ${keyFile}\n`);
    expect(
      (await w.baton(w.dir('sealed'), ['sync', '--first-controller', '--yes'], ['--config', config]))
        .exitCode,
    ).toBe(0);
    const emptyConfig = path.join(tmp.dir, `plain-${seq}.yaml`);
    writeFileSync(emptyConfig, 'journal_dir: /tmp\n');
    const stateDir = w.dir('keyless');
    const status = await w.baton(stateDir, ['status'], ['--config', emptyConfig]);
    expect(status.exitCode, status.all).toBe(3);
    expect(status.stdout).toContain('sealed; this host has no seal key; adopting needs it');
    expect(status.stdout).toMatch(/SHA256:[A-Za-z0-9+/]{43}/);
    const sync = await w.baton(stateDir, ['sync'], ['--config', emptyConfig]);
    expect(sync.exitCode, sync.all).toBe(3);
    expect(sync.stderr).toContain('sealed; this host has no seal key; adopting needs it');
    expect(existsSync(path.join(stateDir, 'ca'))).toBe(false);
  });

  it('a 404 from something that is not S3 is "could not read" (exit 1), not "nothing published"', async () => {
    const web = http.createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html><head><title>404</title></head><body>Not Found</body></html>');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
      const stateDir = path.join(tmp.dir, 'web404');
      const url = `s3://bucket/p?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`;
      const status = await runBaton(
        ['--deployment', DEPLOYMENT, '--state-dir', stateDir, '--store', url, 'status'],
        { env: moto.env },
      );
      expect(status.exitCode, status.all).toBe(1);
      expect(status.all).not.toContain('first controller');
      expect(status.all).toContain(endpoint);
      const sync = await runBaton(
        ['--deployment', DEPLOYMENT, '--no-seal', '--state-dir', stateDir, '--store', url, 'sync'],
        { env: moto.env },
      );
      expect(sync.exitCode, sync.all).toBe(1);
      expect(sync.stderr).toContain('path_style');
      expect(existsSync(stateDir)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => web.close(() => resolve()));
    }
  });
});

describe('store check through a proxy that drops If-Match (the built CLI)', () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy({ upstream: moto.endpoint });
  });
  afterAll(async () => {
    await ifSet(proxy)?.close();
  });

  it('exits 3 naming the replace-if-unchanged probe, and leaves no probe object', async () => {
    const bucket = await moto.bucket({ versioned: true });
    proxy.arm({ fault: 'drop-if-match', count: Infinity });
    const url = moto.storeUrl(bucket, 'checked', { endpoint: proxy.url });
    const run = await runBaton(
      [
        '--deployment',
        DEPLOYMENT,
        '--state-dir',
        path.join(tmp.dir, 'check'),
        '--store',
        url,
        'store',
        'check',
      ],
      { env: moto.env },
    );
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stdout).toContain('NOT enforced (failed: replace-if-unchanged)');
    expect(await moto.versions(bucket)).toEqual([]);
    const direct = await runBaton(
      [
        '--deployment',
        DEPLOYMENT,
        '--state-dir',
        path.join(tmp.dir, 'check2'),
        '--store',
        moto.storeUrl(bucket, 'checked'),
        'store',
        'check',
      ],
      { env: moto.env },
    );
    expect(direct.exitCode, direct.all).toBe(0);
  });
});
