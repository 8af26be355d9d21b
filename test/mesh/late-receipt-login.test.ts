/**
 * The test login is never skipped, not even on the roll-back path: a receipt that arrives after `--wait`
 * sends the rotation down the roll-back path, which finishes a pair whose receipt shows the new
 * password. With `connect:` named, that pair's consumer moves only after its test login passed;
 * a refused login rolls it back like any refused one (before: "1 of 1 credential finished", the
 * consumer moved with no login although the preview promised one).
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { appHooks } from '../../src/mesh/reload.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { BoundTransport, TransportFor } from '../../src/mesh/transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-late-receipt-');
});
afterEach(() => tmp.cleanup());

const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);

/** A port nothing listens on: a test login there is refused by the network. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function writeMesh(port: number): string {
  for (const m of ['db1', 'web1']) mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true });
  const file = path.join(tmp.dir, 'mesh.yaml');
  writeFileSync(
    file,
    [
      'machines:',
      '  - { name: db1, address: machines/db1, transport: local }',
      '  - { name: web1, address: machines/web1, transport: local }',
      'providers:',
      `  - { name: pg-main, machine: db1, kind: postgres, connect: { host: 127.0.0.1, port: ${port}, database: app } }`,
      'consumers:',
      '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection }',
      '',
    ].join('\n'),
  );
  for (const f of [live('web1', 'consumes/pg-main/web1_app'), live('db1', 'provides/pg-main/web1_app')]) {
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, 'old-web1', { mode: 0o600 });
  }
  return file;
}

/** The provisioner's receipt for what the provider end holds now: the late receipt. */
function writeReceiptOfLive(): void {
  const receipt = live('db1', `provides/pg-main/${RECEIPTS_DIR}/web1_app`);
  mkdirSync(path.dirname(receipt), { recursive: true });
  writeFileSync(
    receipt,
    formatReceipt({
      role: 'web1_app',
      digest: secretDigest(readFileSync(live('db1', 'provides/pg-main/web1_app'))),
      applied_at: new Date().toISOString(),
    }),
  );
}

/**
 * The provisioner answers late: its receipt for the new password lands right after the wait
 * gave up, when the roll-back first reads the consumer's end (the provider end is live by then).
 */
function lateReceipt(transportFor: TransportFor): { transportFor: TransportFor; wrote: () => boolean } {
  let wrote = false;
  const wrapped = new Map<string, BoundTransport>();
  return {
    wrote: () => wrote,
    transportFor: (machine: string): BoundTransport => {
      let t = wrapped.get(machine);
      if (!t) {
        const inner = transportFor(machine);
        t = {
          ...inner,
          machine: inner.machine,
          digests: async (paths) => {
            if (
              machine === 'web1' &&
              !wrote &&
              readFileSync(live('db1', 'provides/pg-main/web1_app'), 'utf8') !== 'old-web1'
            ) {
              writeReceiptOfLive();
              wrote = true;
            }
            return inner.digests(paths);
          },
        };
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}

describe('the test login is never skipped', () => {
  it('a receipt after --wait: the roll-back finishes the pair only after its test login; refused, it is rolled back and the consumer keeps its password', async () => {
    const inventory = writeMesh(await closedPort());
    const stateDir = path.join(tmp.dir, 'state');
    const inv = loadInventory(inventory);
    const late = lateReceipt(transportsFor(inv.machines, TEST_BOUNDS));
    const lines: string[] = [];
    const { code } = await runRotationPlain({
      id: 'rot-late',
      plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
      yes: true,
      write: (line) => lines.push(line),
      deps: {
        transportFor: late.transportFor,
        journalDir: stateDir,
        operator: 't',
        resolve: { concurrency: 2 },
        concurrency: 2,
        waitMs: 300,
        pollMs: 10,
        mesh: meshIdentity(inv),
        app: appHooks(inv),
      },
    });
    const said = lines.join('\n');
    expect(late.wrote(), said).toBe(true);
    expect(code, said).toBe(3);
    const last = (await readJournal(stateDir, 'rot-late')).at(-1)!;
    expect(last.phase).toBe('rolled-back');
    expect(last.rolled_back).toEqual([
      expect.objectContaining({ pair: 'pg-main:web1-app', result: 'rolled-back' }),
    ]);
    expect(last.test_logins).toEqual([
      expect.objectContaining({ pair: 'pg-main:web1-app', machine: 'web1', login: 'web1_app', ok: false }),
    ]);
    // The consumer never moved: it keeps the password it had, and nothing is left staged.
    expect(readFileSync(live('web1', 'consumes/pg-main/web1_app'), 'utf8')).toBe('old-web1');
    expect(existsSync(live('web1', 'consumes/pg-main/web1_app.next'))).toBe(false);
    expect(readFileSync(live('db1', 'provides/pg-main/web1_app'), 'utf8')).toBe('old-web1');
    console.log(
      `late receipt with a refused test login: exit ${code}, ${last.rolled_back![0]!.result}, consumer not moved`,
    );
  }, 60_000);
});
