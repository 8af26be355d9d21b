import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationDeps } from '../../src/app/rotation-run-effect.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { formatConsumerConninfo } from '../../src/mesh/alternating.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { Secret } from '../../src/mesh/secret.js';
import { localTransport } from '../../src/transport/local-transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import type { TransportError } from '../../src/mesh/transport.js';
import { UNPLUGGED_MARKER, unpluggable } from '../../src/commands/drill/unplugged.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { bindTransport } from '../../src/transport/bound-transport.js';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-local-');
});
afterEach(() => tmp.cleanup());

const LIVE = '/var/lib/baton/mesh/provides/pg-main/web1_app';

function machines(names: readonly string[]) {
  for (const n of names) mkdirSync(path.join(tmp.dir, 'machines', n), { recursive: true });
  return meshInventory(2, 'local', path.join(tmp.dir, 'machines'));
}

function deps(inv: ReturnType<typeof meshInventory>): RotationDeps {
  return {
    transportFor: transportsFor(inv.machines, TEST_BOUNDS),
    journalDir: path.join(tmp.dir, 'journal'),
    operator: 't',
    resolve: { concurrency: 4 },
    concurrency: 4,
    waitMs: 0,
    pollMs: 10,
  };
}

describe('the local transport', () => {
  it('delivers under the machine directory: staged 0600 with new directories 0700, then renamed live', async () => {
    const root = path.join(tmp.dir, 'db1');
    mkdirSync(root);
    const t = bindTransport(localTransport('db1', root), TEST_BOUNDS);
    await t.resolve();
    const secret = Secret.generate();
    expect(await t.stage([{ path: LIVE, secret }])).toEqual([secret.digest]);
    const staged = path.join(root, `${LIVE}.next`);
    expect(readFileSync(staged, 'utf8')).toBe(secret.reveal());
    expect(statSync(staged).mode & 0o777).toBe(0o600);
    for (const d of ['var', 'var/lib/baton/mesh', 'var/lib/baton/mesh/provides/pg-main'])
      expect(statSync(path.join(root, d)).mode & 0o777).toBe(0o700);
    await t.commit([LIVE]);
    expect(readFileSync(path.join(root, LIVE), 'utf8')).toBe(secret.reveal());
    expect(await t.digests([LIVE])).toEqual([
      {
        live: secretDigest(secret.reveal()),
        next: undefined,
        // Whole seconds, as every holder says it (the agent's stat, docs/agent-protocol.md).
        liveModifiedMs: Math.floor(statSync(path.join(root, LIVE)).mtimeMs / 1000) * 1000,
      },
    ]);
  });

  it('names the login of an alternating consumer end among the digests', async () => {
    const root = path.join(tmp.dir, 'web1');
    const consumer = '/var/lib/baton/mesh/consumes/pg-main/web1_app';
    mkdirSync(path.dirname(path.join(root, consumer)), { recursive: true });
    writeFileSync(path.join(root, consumer), formatConsumerConninfo('web1_app_a', 'pw'), { mode: 0o600 });
    const t = bindTransport(localTransport('web1', root), TEST_BOUNDS);
    expect((await t.digests([consumer]))[0]).toMatchObject({
      liveLogin: 'web1_app_a',
      live: secretDigest("user=web1_app_a password='pw'"),
    });
    writeFileSync(path.join(root, consumer), 'bare-secret');
    expect((await t.digests([consumer]))[0]).not.toHaveProperty('liveLogin');
  });

  it('replaces atomically: a new inode, no temp file left, and unstage keeps the live file', async () => {
    const root = path.join(tmp.dir, 'db1');
    mkdirSync(root);
    const t = bindTransport(localTransport('db1', root), TEST_BOUNDS);
    await t.stage([{ path: LIVE, secret: Secret.generate() }]);
    await t.commit([LIVE]);
    const ino = statSync(path.join(root, LIVE)).ino;
    const second = Secret.generate();
    await t.stage([{ path: LIVE, secret: second }]);
    await t.commit([LIVE]);
    expect(statSync(path.join(root, LIVE)).ino).not.toBe(ino);
    await t.stage([{ path: LIVE, secret: Secret.generate() }]);
    await t.unstage([LIVE]);
    expect(readdirSync(path.dirname(path.join(root, LIVE)))).toEqual(['web1_app']);
    expect(readFileSync(path.join(root, LIVE), 'utf8')).toBe(second.reveal());
  });

  it('a roll-back keeps the password it takes away as a 0600 dotfile beside the live one, and discarding the pair removes it', async () => {
    const root = path.join(tmp.dir, 'db1');
    mkdirSync(root);
    const t = bindTransport(localTransport('db1', root), TEST_BOUNDS);
    const dir = path.dirname(path.join(root, LIVE));
    const old = Secret.generate();
    await t.stage([{ path: LIVE, secret: old }]);
    await t.commit([LIVE]);
    const fresh = Secret.generate();
    await t.stage([{ path: LIVE, secret: fresh }]);
    await t.keepPrevious([LIVE]);
    await t.commit([LIVE]);
    expect(await t.restorePrevious([LIVE])).toEqual([true]);
    expect(readFileSync(path.join(root, LIVE), 'utf8')).toBe(old.reveal());
    expect(readdirSync(dir).sort()).toEqual(['.web1_app.rolled-back', 'web1_app']);
    const kept = path.join(dir, '.web1_app.rolled-back');
    expect(readFileSync(kept, 'utf8')).toBe(fresh.reveal());
    expect(statSync(kept).mode & 0o777).toBe(0o600);
    // Not a leftover: the digests a rotation checks show no previous file.
    expect((await t.digests([LIVE]))[0]).toEqual(expect.not.objectContaining({ prev: expect.anything() }));
    await t.discardPrevious([LIVE]);
    expect(readdirSync(dir)).toEqual(['web1_app']);
  });

  it("retire removes a switched pair's file with its staged, kept and rolled-back copies and its receipt, and nothing beside it", async () => {
    const root = path.join(tmp.dir, 'db1');
    const dir = path.dirname(path.join(root, LIVE));
    mkdirSync(path.join(dir, '.applied'), { recursive: true });
    for (const f of [
      'web1_app',
      'web1_app.next',
      '.web1_app.prev',
      '.web1_app.rolled-back',
      '.applied/web1_app',
      'web1_app+a',
      '.applied/web1_app+a',
    ])
      writeFileSync(path.join(dir, f), 'x', { mode: 0o600 });
    const t = bindTransport(localTransport('db1', root), TEST_BOUNDS);
    await t.retire([LIVE, `${path.dirname(LIVE)}/absent`]);
    expect(readdirSync(dir).sort()).toEqual(['.applied', 'web1_app+a']);
    expect(readdirSync(path.join(dir, '.applied'))).toEqual(['web1_app+a']);
  });

  it('a machine whose directory is missing, or that the drill unplugged, does not resolve and says why', async () => {
    const missing = await bindTransport(localTransport('web1', path.join(tmp.dir, 'nope')), TEST_BOUNDS)
      .resolve()
      .catch((e: unknown) => e);
    expect((missing as TransportError).reason).toContain('does not exist');
    const root = path.join(tmp.dir, 'web2');
    mkdirSync(root);
    await bindTransport(localTransport('web2', root), TEST_BOUNDS).resolve();
    writeFileSync(path.join(root, UNPLUGGED_MARKER), '');
    // The production adapter ignores the drill's marker; only the drill's wrapper honours it.
    await bindTransport(localTransport('web2', root), TEST_BOUNDS).resolve();
    const machine = { name: 'web2', transport: 'local' as const, address: root, meshDir: '/m', root };
    const marked = await bindTransport(unpluggable(localTransport('web2', root), machine), TEST_BOUNDS)
      .resolve()
      .catch((e: unknown) => e);
    expect((marked as TransportError).reason).toContain('unplugged by the drill');
  });

  it('a rotation with one unreachable holder writes nothing on any machine', async () => {
    const inv = machines(['db1', 'db2', 'web1']); // web2 has no directory
    const before = snapshotDir(tmp.dir);
    const lines: string[] = [];
    const { code } = await runRotationPlain({
      id: 'r',
      plan: planRotation(inv, { by: 'machine', name: 'db1' }),
      deps: deps(inv),
      yes: true,
      write: (l) => lines.push(l),
    });
    expect(code).toBe(4);
    expect(lines.join('\n')).toContain(
      `web2: its directory ${path.join(tmp.dir, 'machines', 'web2')} does not exist`,
    );
    const after = snapshotDir(tmp.dir);
    for (const k of Object.keys(after)) if (k.startsWith('journal')) delete after[k];
    expect(after).toEqual(before);
  });

  it('a real write failure on one holder during prepare removes every staged file; live files keep their old secret', async () => {
    const inv = machines(['db1', 'db2', 'web1', 'web2']);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    // Old credentials everywhere, and web2 cannot hold a consumes/ directory (a file is in the way).
    for (const h of plan.holders)
      for (const d of h.receives) {
        const file = path.join(tmp.dir, 'machines', h.machine, d.path);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, `old-${d.pair}`, { mode: 0o600 });
      }
    const web2Consumes = path.join(tmp.dir, 'machines/web2/var/lib/baton/mesh/consumes/pg-main');
    rmSync(web2Consumes, { recursive: true });
    writeFileSync(web2Consumes, 'in the way');
    const files = () =>
      Object.fromEntries(
        Object.entries(snapshotDir(tmp.dir)).filter(
          ([k, v]) => v.startsWith('file') && !k.startsWith('journal') && !k.endsWith('.rotation'),
        ),
      );
    const before = files();
    const lines: string[] = [];
    const { code } = await runRotationPlain({
      id: 'r',
      plan,
      deps: deps(inv),
      yes: true,
      write: (l) => lines.push(l),
    });
    expect(code).toBe(4);
    // The consumer's record (written before anything is staged) is the first write that fails there.
    expect(lines.join('\n')).toMatch(
      /web2: (staging|writing the rotation record) failed on the machine: could not create \S+: (File exists|Not a directory)/,
    );
    expect(files()).toEqual(before);
    expect(Object.keys(files()).filter((k) => k.includes('.next'))).toEqual([]);
    expect(existsSync(path.join(tmp.dir, 'machines/db1', plan.pairs[0]!.providerPath))).toBe(true);
  });
});

describe('waiting for receipts on local machines', () => {
  it('renames the consumer end only once the receipt carries the digest of the delivered file, and reports it applied', async () => {
    const inv = machines(['db1', 'db2', 'web1', 'web2']);
    const plan = planRotation(inv, { by: 'pair', provider: 'pg-audit', consumer: 'web2-app' });
    const pair = plan.pairs[0]!;
    const liveFile = path.join(tmp.dir, 'machines/db2', pair.providerPath);
    const receiptFile = path.join(tmp.dir, 'machines/db2', pair.receiptPath);
    // A stand-in provisioner: once the provider file is live, it writes its receipt.
    let stop = false as boolean; // set by the other task
    const provisioner = (async () => {
      while (!stop) {
        if (existsSync(liveFile) && !existsSync(receiptFile)) {
          mkdirSync(path.dirname(receiptFile), { recursive: true });
          writeFileSync(
            receiptFile,
            formatReceipt({
              role: pair.role,
              digest: secretDigest(readFileSync(liveFile)),
              applied_at: new Date().toISOString(),
            }),
          );
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    const lines: string[] = [];
    const { code, state } = await runRotationPlain({
      id: 'r',
      plan,
      deps: { ...deps(inv), waitMs: 20_000, pollMs: 20 },
      yes: true,
      write: (l) => lines.push(l),
    });
    stop = true;
    await provisioner;
    expect(code).toBe(0);
    expect(state.step === 'done' && state.applied).toEqual(['pg-audit:web2-app']);
    expect(lines).toContain('applied 1/1 (provider receipts, then consumer ends)');
    expect(
      lines.some((l) =>
        /^ {2}✓ pg-audit applied web2_app; web2-app's file replaced \d+ ms later \(the window\)$/.test(l),
      ),
    ).toBe(true);
    expect(readFileSync(path.join(tmp.dir, 'machines/web2', pair.consumerPath), 'utf8')).toBe(
      readFileSync(liveFile, 'utf8'),
    );
  });
});

describe('the local transport as a receipt reader and a rename channel', () => {
  let dir: { dir: string; cleanup: () => void };
  beforeEach(() => {
    dir = makeTempDir('baton-local-watch-');
  });
  afterEach(() => dir.cleanup());

  it("reports every path at once, then each change; renames timed by this host's clock (an offset within a few ms)", async () => {
    const transport = localTransport('db1', dir.dir);
    mkdirSync(path.join(dir.dir, 'r'), { recursive: true });
    writeFileSync(path.join(dir.dir, 'r/a'), 'first');
    const reports: (readonly { index: number; text: string | undefined }[])[] = [];
    const stop = new AbortController();
    const watching = transport.watchTexts!(
      ['/r/a', '/r/b'],
      { intervalMs: 5, forMs: 10_000 },
      (changes) => reports.push(changes),
      stop.signal,
    );
    // The agent's first report names every path; only then is one changed.
    for (let until = Date.now() + 5_000; reports.length < 1 && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 5));
    // Written as a provisioner writes a receipt (whole, by rename): a plain write can be seen
    // empty between its truncate and its write, which the watch rightly reports.
    writeFileSync(path.join(dir.dir, 'r/.b.tmp'), 'second');
    renameSync(path.join(dir.dir, 'r/.b.tmp'), path.join(dir.dir, 'r/b'));
    const until = Date.now() + 5_000;
    while (reports.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    await watching;
    expect(reports).toEqual([
      [
        { index: 0, text: 'first' },
        { index: 1, text: undefined },
      ],
      [{ index: 1, text: 'second' }],
    ]);

    const secret = Secret.generate();
    await transport.stage([{ path: '/r/x', secret }], new AbortController().signal);
    const life = new AbortController();
    const channel = await transport.openChannel!(life.signal);
    // The same clock, measured over the channel as on any machine: off by at most its round trip
    // (and the few ms the controller's monotonic clock drifts from the realtime one).
    expect(Math.abs(channel.clock.offsetMs)).toBeLessThanOrEqual(channel.clock.withinMs + 20);
    const before = Date.now();
    const at = await channel.commit(['/r/x'], life.signal);
    // The rename's time is read from the monotonic clock (timeOrigin + now()), which drifts a
    // few ms from Date.now(): "no offset" means the same clock within that, not to the ms.
    expect(at).toBeGreaterThanOrEqual(before - 20);
    expect(at).toBeLessThanOrEqual(Date.now() + 20);
    expect(readFileSync(path.join(dir.dir, 'r/x'), 'utf8')).toBe(secret.reveal());
    channel.close();
  });
});
