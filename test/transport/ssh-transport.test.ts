import { readFileSync, readdirSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { secretDigest } from '../../src/mesh/digest.js';
import type { Inventory } from '../../src/mesh/inventory.js';
import { readJournal, JOURNAL_FILE } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
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
    // The scan saw the holders' agents (perl started by the command ssh hands the login shell).
    expect(seen.filter((s) => s.includes('perl\0-e\0')).length).toBeGreaterThan(0);
    const haystacks = [...seen, readFileSync(path.join(journal, JOURNAL_FILE), 'utf8'), out.join('\n')];
    expect(haystacks.filter((h) => h.includes(secret))).toEqual([]);
  });
});
