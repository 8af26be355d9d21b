import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationDeps } from '../../src/app/rotation-run-effect.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { localAgent } from '../../src/transport/local-agent.js';
import { localTransport } from '../../src/transport/local-transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import type { TransportError } from '../../src/mesh/transport.js';
import { UNPLUGGED_MARKER, unpluggable } from '../../src/commands/drill/unplugged.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { processTable } from '../helpers/process-registry.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { bindTransport } from '../../src/transport/bound-transport.js';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-local-');
});
afterEach(() => tmp.cleanup());

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

  it('a machine that is this host itself (address /) has its files where their paths say', async () => {
    const file = path.join(tmp.dir, 'itself', 'consumes', 'pg-main', 'web1_app');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'live-password', { mode: 0o600 });
    const web1 = bindTransport(localTransport('web1', '/'), TEST_BOUNDS);
    await web1.resolve();
    const [read] = await web1.digests([file]);
    expect(read?.live).toBe(secretDigest(Buffer.from('live-password')));
    expect(await web1.readTexts([file, `${file}.absent`])).toEqual(['live-password', undefined]);
  });

  it('one serving agent answers the file operations of every machine root of this host', async () => {
    const roots = ['db1', 'web1', 'web2'].map((m) => {
      const file = path.join(tmp.dir, 'shared', m, 'mesh', 'consumes', 'pg-main', 'app');
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `password of ${m}`, { mode: 0o600 });
      return { m, root: path.join(tmp.dir, 'shared', m) };
    });
    const reads = await Promise.all(
      roots.map(({ m, root }) =>
        bindTransport(localTransport(m, root), TEST_BOUNDS).digests(['/mesh/consumes/pg-main/app']),
      ),
    );
    // Each path was read under its own machine's root.
    expect(reads.map((r) => r[0]?.live)).toEqual(
      roots.map(({ m }) => secretDigest(Buffer.from(`password of ${m}`))),
    );
    const serving = processTable().filter(
      (row) => row.ppid === process.pid && row.state !== 'Z' && row.command.endsWith(' serve'),
    );
    expect(serving).toHaveLength(1);
  });

  it('a request for a machine whose root is not a directory fails in the agent’s words, each time; the others are answered', async () => {
    // Past the transport's own check (the directory is gone between it and the request).
    const gone = path.join(tmp.dir, 'not-a-root');
    const here = path.join(tmp.dir, 'a-root');
    mkdirSync(here);
    writeFileSync(path.join(here, 'app'), 'live');
    for (const what of ['reading digests', 'reading digests again']) {
      const failed = await localAgent('web1', gone)
        .call(what, ['files', 'digests', '/app'], AbortSignal.timeout(20_000))
        .then(
          () => undefined,
          (e: unknown) => e as TransportError,
        );
      expect(failed?.reason, what).toBe(
        `${what} failed on the machine: the machine's root ${gone} is not a directory`,
      );
      const [read] = await bindTransport(localTransport('web2', here), TEST_BOUNDS).digests(['/app']);
      expect(read?.live).toBe(secretDigest(Buffer.from('live')));
    }
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
