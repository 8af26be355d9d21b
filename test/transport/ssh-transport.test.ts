import {
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  existsSync,
  mkdirSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { formatReceipt, parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { formatConsumerConninfo } from '../../src/mesh/alternating.js';
import type { Inventory } from '../../src/mesh/inventory.js';
import { readJournal, JOURNAL_FILE } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { Secret } from '../../src/mesh/secret.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import type { ExecFn } from '../../src/transport/run-process.js';
import { sshTransport } from '../../src/transport/ssh-transport.js';
import { TransportError } from '../../src/mesh/transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, sshTargetOf, startSshd, type Sshd } from '../helpers/sshd.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { watchedExec } from '../helpers/watched-exec.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { withLiveProvisioner } from '../mesh/receipt-writer.js';
import { sshMeshInventory } from '../mesh/mesh-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const unavailable = sshdUnavailable();

describeWithPart(unavailable, 'the ssh transport against a real sshd on 127.0.0.1', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    sshd = await startSshd();
    tmp = makeTempDir('baton-ssh-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  const target = (port = sshd.port) => sshTargetOf(sshd, { port });

  /** Two ssh machines on the one sshd, each with its own mesh_dir, and a consumer on each. */
  const inventory = (base: string, ports: { db1?: number; web1?: number } = {}): Inventory =>
    sshMeshInventory(sshd, base, ports);

  it("holds a provider's lock in a remote shell: a second controller is told who holds it, a probe sees it, and the machine lets it go when the holder's ssh dies", async () => {
    const dir = path.join(tmp.dir, 'lock', 'provides', 'pg-main');
    mkdirSync(dir, { recursive: true });
    const before = snapshotDir(path.join(tmp.dir, 'lock'));
    const first = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    const second = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    const held = await first.lock(dir, '{"command":"mesh rotate --pair pg-main:web1-app","pid":1}');
    expect(held.taken).toBe(true);
    expect(await second.lock(dir, '{"command":"other"}')).toEqual({
      taken: false,
      holder: '{"command":"mesh rotate --pair pg-main:web1-app","pid":1}',
    });
    // The one read of a path beside it says the lock is held, and by whom.
    const [read] = await second.digests([path.join(dir, 'web1_app')]);
    expect(read?.lockedBy).toBe('{"command":"mesh rotate --pair pg-main:web1-app","pid":1}');
    if (held.taken) await held.release();
    // Let go: free for the next, and the holder's words are gone (nothing left on the machine).
    expect((await second.digests([path.join(dir, 'web1_app')]))[0]?.lockedBy).toBeUndefined();
    expect(snapshotDir(path.join(tmp.dir, 'lock'))).toEqual(before);
    // A holder whose ssh is killed (baton SIGKILLed): the remote shell's stdin ends, the kernel lets the lock go.
    const killer = new AbortController();
    const dying = bindTransport(sshTransport('db1', target()), { timeoutMs: 10_000, signal: killer.signal });
    expect((await dying.lock(dir, '{"command":"dies"}')).taken).toBe(true);
    killer.abort(new Error('killed'));
    await vi.waitFor(
      async () => expect((await second.digests([path.join(dir, 'web1_app')]))[0]?.lockedBy).toBeUndefined(),
      { timeout: 10_000, interval: 100 },
    );
    const again = await second.lock(dir, '{"command":"next"}');
    expect(again.taken).toBe(true);
    if (again.taken) await again.release();
  });

  it('names the login of an alternating consumer end without sending its password back, and none for a bare secret', async () => {
    const dir = path.join(tmp.dir, 'login');
    mkdirSync(dir, { recursive: true });
    const conninfo = path.join(dir, 'web1_app');
    const bare = path.join(dir, 'web2_app');
    writeFileSync(conninfo, formatConsumerConninfo('web1_app_b', 'pw-must-not-travel'), { mode: 0o600 });
    writeFileSync(bare, 'user=looks-like-but-is-a-secret', { mode: 0o600 });
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    const [alternating, single] = await transport.digests([conninfo, bare]);
    expect(alternating).toMatchObject({
      live: secretDigest(readFileSync(conninfo, 'utf8')),
      liveLogin: 'web1_app_b',
    });
    expect(single).not.toHaveProperty('liveLogin');
    expect(JSON.stringify([alternating, single])).not.toContain('pw-must-not-travel');
  });

  it('stages over stdin to <role>.next (0600, new directories 0700), commits by rename, and reads digests back', async () => {
    const dir = path.join(tmp.dir, 'stage');
    const live = path.join(dir, 'mesh/provides/pg-main/web1_app');
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    await transport.resolve();
    const secret = Secret.generate();
    await transport.stage([{ path: live, secret }]);
    expect(readFileSync(`${live}.next`, 'utf8')).toBe(secret.reveal());
    expect(statSync(`${live}.next`).mode & 0o777).toBe(0o600);
    for (const d of ['mesh', 'mesh/provides', 'mesh/provides/pg-main'])
      expect(statSync(path.join(dir, d)).mode & 0o777).toBe(0o700);
    expect(await transport.digests([live])).toEqual([{ live: undefined, next: secret.digest }]);
    await transport.commit([live]);
    expect(readFileSync(live, 'utf8')).toBe(secret.reveal());
    expect(statSync(live).mode & 0o777).toBe(0o600);
    expect(existsSync(`${live}.next`)).toBe(false);
    expect(await transport.digests([live])).toEqual([
      {
        live: secretDigest(secret.reveal()),
        next: undefined,
        liveModifiedMs: Math.floor(statSync(live).mtimeMs / 1000) * 1000,
      },
    ]);
  });

  it('replaces a live file atomically: a new inode renamed over the old, no temp file left behind', async () => {
    const dir = path.join(tmp.dir, 'replace/provides/pg-main');
    const live = path.join(dir, 'r');
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    await transport.stage([{ path: live, secret: Secret.generate() }]);
    await transport.commit([live]);
    const firstInode = statSync(live).ino;
    const second = Secret.generate();
    await transport.stage([{ path: live, secret: second }]);
    await transport.commit([live]);
    expect(statSync(live).ino).not.toBe(firstInode);
    expect(readFileSync(live, 'utf8')).toBe(second.reveal());
    expect(readdirSync(dir)).toEqual(['r']);
  });

  it('unstage removes staged files and leaves the live one', async () => {
    const live = path.join(tmp.dir, 'unstage/x');
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    const old = Secret.generate();
    await transport.stage([{ path: live, secret: old }]);
    await transport.commit([live]);
    await transport.stage([{ path: live, secret: Secret.generate() }]);
    await transport.unstage([live]);
    expect(readdirSync(path.dirname(live))).toEqual(['x']);
    expect(readFileSync(live, 'utf8')).toBe(old.reveal());
  });

  it('keeps the previous provider file at a commit, restores it (removing the receipt) or discards it; a retried keep leaves nothing behind', async () => {
    const dir = path.join(tmp.dir, 'previous/provides/pg-main');
    const live = path.join(dir, 'web1_app');
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    const old = Secret.generate();
    await transport.stage([{ path: live, secret: old }]);
    await transport.commit([live]);
    const fresh = Secret.generate();
    await transport.stage([{ path: live, secret: fresh }]);
    expect(await transport.keepPrevious([live])).toEqual([old.digest]);
    expect(await transport.keepPrevious([live])).toEqual([old.digest]); // a retried commit keeps the same file
    await transport.commit([live]);
    expect(readdirSync(dir).sort()).toEqual(['.web1_app.prev', 'web1_app']);
    expect((await transport.digests([live]))[0]).toMatchObject({ live: fresh.digest, prev: old.digest });
    mkdirSync(path.join(dir, '.applied'), { recursive: true });
    writeFileSync(
      path.join(dir, '.applied/web1_app'),
      formatReceipt({ role: 'web1_app', digest: fresh.digest, applied_at: '2026-11-30T00:00:00Z' }),
    );
    expect(await transport.restorePrevious([live, path.join(dir, 'nobody')])).toEqual([true, false]);
    expect(readFileSync(live, 'utf8')).toBe(old.reveal());
    // The new password (maybe already in the database) is kept aside, owner-only.
    expect(readdirSync(dir).sort()).toEqual(['.applied', '.web1_app.rolled-back', 'web1_app']);
    expect(readFileSync(path.join(dir, '.web1_app.rolled-back'), 'utf8')).toBe(fresh.reveal());
    expect(statSync(path.join(dir, '.web1_app.rolled-back')).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.join(dir, '.applied'))).toEqual([]); // the provisioner confirms the old one again
    // No live file before the commit: the kept file is empty, and restoring it removes the live one.
    const first = path.join(dir, 'web2_app');
    await transport.stage([{ path: first, secret: fresh }]);
    expect(await transport.keepPrevious([first])).toEqual([undefined]);
    await transport.commit([first]);
    expect(await transport.restorePrevious([first])).toEqual([true]);
    expect(existsSync(first)).toBe(false);
    await transport.stage([{ path: live, secret: fresh }]);
    await transport.keepPrevious([live]);
    await transport.commit([live]);
    await transport.discardPrevious([live, first]);
    expect(readdirSync(dir).sort()).toEqual(['.applied', 'web1_app']);
  });

  it("retire removes a switched pair's file with its staged, kept and rolled-back copies and its receipt, and nothing beside it", async () => {
    const dir = path.join(tmp.dir, 'retire/provides/pg-main');
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
    const transport = bindTransport(sshTransport('db1', target()), TEST_BOUNDS);
    await transport.retire([path.join(dir, 'web1_app'), path.join(dir, 'absent')]);
    expect(readdirSync(dir).sort()).toEqual(['.applied', 'web1_app+a']);
    expect(readdirSync(path.join(dir, '.applied'))).toEqual(['web1_app+a']);
  });

  it('reads receipts as text, and an absent one as absent', async () => {
    const dir = path.join(tmp.dir, 'receipts/.applied');
    mkdirSync(dir, { recursive: true });
    const receipt = formatReceipt({
      role: 'web1_app',
      digest: secretDigest('x'),
      applied_at: '2026-11-30T00:00:00Z',
    });
    writeFileSync(path.join(dir, 'web1_app'), receipt);
    const texts = await bindTransport(sshTransport('db1', target()), TEST_BOUNDS).readTexts([
      path.join(dir, 'web1_app'),
      path.join(dir, 'nobody'),
    ]);
    expect(texts).toEqual([receipt.trimEnd(), undefined]);
    expect(parseReceipt(texts[0]!)?.digest).toBe(secretDigest('x'));
  });

  it('a receipt reader reports every path at once, then each change as it is written; a rename channel renames, timed by the machine', async () => {
    const dir = path.join(tmp.dir, 'watch/.applied');
    mkdirSync(dir, { recursive: true });
    const [a, b] = [path.join(dir, 'a'), path.join(dir, 'b')];
    writeFileSync(a, 'first\n');
    const transport = sshTransport('db1', target());
    const reports: { at: number; changes: readonly { index: number; text: string | undefined }[] }[] = [];
    const stop = new AbortController();
    const watching = transport.watchTexts!(
      [a, b],
      { intervalMs: 10, forMs: 20_000 },
      (changes) => reports.push({ at: Date.now(), changes }),
      stop.signal,
    );
    await vi.waitFor(() => expect(reports).toHaveLength(1), { timeout: 10_000, interval: 10 });
    expect(reports[0]!.changes).toEqual([
      { index: 0, text: 'first' },
      { index: 1, text: undefined },
    ]);
    const written = Date.now();
    // Written as the provisioner writes a receipt (a temp file renamed into place): a file written
    // in place can be read empty between its creation and its write, which is a change too.
    writeFileSync(`${b}.tmp`, 'second\n');
    renameSync(`${b}.tmp`, b);
    await vi.waitFor(() => expect(reports).toHaveLength(2), { timeout: 10_000, interval: 5 });
    // Only what changed, and soon: a poll on the machine, not an ssh call per poll.
    expect(reports[1]!.changes).toEqual([{ index: 1, text: 'second' }]);
    expect(reports[1]!.at - written).toBeLessThan(1_000);
    stop.abort();
    await watching;

    const live = path.join(tmp.dir, 'channel/x');
    const staged = Secret.generate();
    await bindTransport(transport, TEST_BOUNDS).stage([{ path: live, secret: staged }]);
    const life = new AbortController();
    const channel = await transport.openChannel!(life.signal);
    // The same host: the measured offset is within its own bound of zero.
    expect(Math.abs(channel.clock.offsetMs)).toBeLessThanOrEqual(channel.clock.withinMs + 5);
    const before = Date.now();
    const at = await channel.commit([live], life.signal);
    expect(at).toBeGreaterThanOrEqual(before - 5);
    expect(at).toBeLessThanOrEqual(Date.now() + 5);
    expect(readFileSync(live, 'utf8')).toBe(staged.reveal());
    await expect(channel.commit([path.join(tmp.dir, 'channel/none')], life.signal)).rejects.toThrow(
      `no staged file ${path.join(tmp.dir, 'channel/none')}.next`,
    );
    await expect(channel.commit(['/a\nb'], life.signal)).rejects.toThrow(
      'a path with a line break cannot be renamed',
    );
    channel.close();
    life.abort();
  });

  it('commit fails, naming the file, when nothing is staged', async () => {
    const live = path.join(tmp.dir, 'nothing/y');
    await expect(bindTransport(sshTransport('db1', target()), TEST_BOUNDS).commit([live])).rejects.toThrow(
      `no staged file ${live}.next`,
    );
  });

  it('a machine on a port nobody listens on does not resolve, and says why', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const error = await bindTransport(sshTransport('web1', target(closed)), TEST_BOUNDS)
      .resolve()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).reason).toMatch(/Connection refused/);
  });

  it('rotates both ends over ssh, and an unreachable port closes the gate with zero files written anywhere', async () => {
    const base = path.join(tmp.dir, 'rotate');
    mkdirSync(base, { recursive: true });
    const journal = path.join(base, 'journal');
    // Gate: web1 points at a port nobody listens on.
    const before = snapshotDir(base);
    const closedPlan = planRotation(inventory(base, { web1: 1 }), { by: 'provider', name: 'pg-main' });
    const closedLines: string[] = [];
    const closed = await runRotationPlain({
      id: 'rot-gate',
      plan: closedPlan,
      yes: true,
      write: (l) => closedLines.push(l),
      deps: {
        transportFor: transportsFor(inventory(base, { web1: 1 }).machines, TEST_BOUNDS),
        journalDir: journal,
        operator: 't',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 0,
        pollMs: 10,
      },
    });
    expect(closed.code).toBe(4);
    expect(closedLines.join('\n')).toMatch(
      /web1: ssh failed: connect to host 127\.0\.0\.1 port 1: Connection refused/,
    );
    const after = snapshotDir(base);
    delete after.journal;
    delete after['journal/mesh-journal.jsonl'];
    expect(after).toEqual(before);

    const inv = inventory(base);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    const { code, state } = await runRotationPlain({
      id: 'rot-ok',
      plan,
      yes: true,
      write: () => undefined,
      // The machines' mesh dirs are on this filesystem (sshd on localhost): pg-main's provisioner
      // stands in from here, so each consumer end follows its receipt.
      deps: {
        transportFor: withLiveProvisioner(transportsFor(inv.machines, TEST_BOUNDS), () => '/'),
        journalDir: journal,
        operator: 't',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 10_000,
        pollMs: 10,
      },
    });
    expect(code).toBe(0);
    expect(state.step).toBe('done');
    const prepared = (await readJournal(journal, 'rot-ok')).find((r) => r.phase === 'prepared')!;
    for (const p of prepared.pairs) {
      const provider = readFileSync(p.provider_path, 'utf8');
      expect(readFileSync(p.consumer_path, 'utf8')).toBe(provider);
      expect(provider).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(secretDigest(provider)).toBe(p.digest);
    }
    expect(readFileSync(path.join(journal, JOURNAL_FILE), 'utf8')).not.toContain(
      readFileSync(prepared.pairs[0]!.provider_path, 'utf8'),
    );
  });

  it('never puts a secret in the argv or environment of any process, the journal or the output', async () => {
    const base = path.join(tmp.dir, 'leak');
    const journal = path.join(base, 'journal');
    mkdirSync(base, { recursive: true });
    const seen: string[] = [];
    const readProc = (pid: number | string) => {
      for (const f of ['cmdline', 'environ']) {
        try {
          seen.push(readFileSync(`/proc/${pid}/${f}`).toString('utf8'));
        } catch {
          // gone already
        }
      }
    };
    // Every child baton starts: its argv and env as given, and as the kernel shows them.
    const watched = watchedExec((pid) => readProc(pid));
    const recording: ExecFn = (file, args, options) => {
      seen.push([file, ...args].join('\0'), JSON.stringify(process.env));
      return watched(file, args, options);
    };
    // And every process on the machine (sshd's sessions, the remote sh) while the rotation runs.
    let scanning = true as boolean; // set false by the other task
    const scanner = (async () => {
      while (scanning) {
        for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) readProc(pid);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const inv = inventory(base);
    const plan = planRotation(inv, { by: 'consumer', name: 'web1-app' });
    const out: string[] = [];
    const { code } = await runRotationPlain({
      id: 'rot-leak',
      plan,
      yes: true,
      write: (l) => out.push(l),
      deps: {
        transportFor: withLiveProvisioner(
          transportsFor(inv.machines, TEST_BOUNDS, { ssh: { exec: recording } }),
          () => '/',
        ),
        journalDir: journal,
        operator: 't',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 10_000,
        pollMs: 10,
      },
    });
    scanning = false;
    await scanner;
    expect(code).toBe(0);
    const secret = readFileSync(plan.pairs[0]!.providerPath, 'utf8');
    expect(secret).toHaveLength(43);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((s) => s.includes('sh -c')).length).toBeGreaterThan(0);
    const haystacks = [...seen, readFileSync(path.join(journal, JOURNAL_FILE), 'utf8'), out.join('\n')];
    expect(haystacks.filter((h) => h.includes(secret))).toEqual([]);
  });
});
