/**
 * A stand-in provisioner for local-transport tests that have no database: every 20 ms it
 * writes, for each live file under `<machine>/<mesh_dir>/provides/<provider>/`, the receipt a
 * provisioner writes once the database took it. Runs in the test process, so the CLI under
 * test must be spawned asynchronously.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { formatReceipt, parseReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import type { BoundTransport, TransportFor } from '../../src/mesh/transport.js';

export function startReceiptWriter(
  providesDir: string,
  /** Only these roles' receipts are written (every role's if absent): a provisioner that applied some. */
  only: (role: string) => boolean = () => true,
): { stop(): void } {
  const tick = () => {
    let names: string[];
    try {
      names = readdirSync(providesDir);
    } catch {
      return;
    }
    for (const role of names) {
      if (role.startsWith('.') || role.includes('.next') || !only(role)) continue;
      const file = path.join(providesDir, role);
      if (!statSync(file, { throwIfNoEntry: false })?.isFile()) continue;
      const digest = secretDigest(readFileSync(file));
      const receipt = path.join(providesDir, '.applied', role);
      let current: string | undefined;
      try {
        current = parseReceipt(readFileSync(receipt, 'utf8'))?.digest;
      } catch {
        current = undefined;
      }
      if (current === digest) continue;
      mkdirSync(path.dirname(receipt), { recursive: true, mode: 0o700 });
      writeFileSync(receipt, formatReceipt({ role, digest, applied_at: new Date().toISOString() }), {
        mode: 0o600,
      });
    }
  };
  const timer = setInterval(tick, 20);
  return { stop: () => clearInterval(timer) };
}

/**
 * The stand-in as a suite turns it on and off across its steps (a provisioner that comes back,
 * applies only some roles, or is gone): at most one writer runs at a time, and `gone()` in the
 * suite's afterEach stops whichever is left.
 */
export function standInProvisioner(providesDir: () => string): {
  back(only?: (role: string) => boolean): void;
  gone(): void;
} {
  let writer: { stop(): void } | undefined;
  return {
    back(only) {
      writer?.stop();
      writer = startReceiptWriter(providesDir(), only);
    },
    gone() {
      writer?.stop();
      writer = undefined;
    },
  };
}

/**
 * A provisioner that has always just run: before any receipt is read, and as soon as a
 * provider end is committed, each provider file live at that moment gets its receipt. It follows the files, not the calls, so a commit cut
 * part-way leaves receipts for exactly what became live — as a real provisioner would.
 */
export function withLiveProvisioner(
  transportFor: TransportFor,
  rootOf: (machine: string) => string,
): TransportFor {
  return (name) => {
    const transport = transportFor(name);
    const provision = (paths: readonly string[]) => {
      for (const p of paths) {
        const receipt = path.join(rootOf(name), p);
        if (path.basename(path.dirname(receipt)) !== RECEIPTS_DIR) continue;
        const role = path.basename(receipt);
        let secret: Buffer;
        try {
          secret = readFileSync(path.join(path.dirname(path.dirname(receipt)), role));
        } catch {
          continue;
        }
        mkdirSync(path.dirname(receipt), { recursive: true, mode: 0o700 });
        writeFileSync(
          receipt,
          formatReceipt({ role, digest: secretDigest(secret), applied_at: new Date().toISOString() }),
          { mode: 0o600 },
        );
      }
    };
    const provisionCommitted = (paths: readonly string[]) =>
      provision(
        paths
          .filter((p) => p.includes('/provides/'))
          .map((p) => path.join(path.dirname(p), RECEIPTS_DIR, path.basename(p))),
      );
    const wrapped: BoundTransport = {
      ...transport,
      async readTexts(paths) {
        provision(paths);
        return transport.readTexts(paths);
      },
      // Receipt readers start before the provider ends go live: a provider end renamed into
      // place gets its receipt at once, as a provisioner that has always just run would write.
      async commit(paths) {
        await transport.commit(paths);
        provisionCommitted(paths);
      },
      // A provider end committed in the request that wrote its intent: the same provisioner.
      async writeRecordsThen(records, step) {
        const answer = await transport.writeRecordsThen(records, step);
        if (!('stage' in step) && step.commit) provisionCommitted(step.keep);
        return answer;
      },
      // The provider ends may go live over the receipt wait's rename channel instead of commit():
      // the same provisioner follows them there.
      ...(transport.openChannel && {
        async openChannel() {
          const channel = await transport.openChannel!();
          return {
            get clock() {
              return channel.clock; // refined after opening: read through, never copied
            },
            close: () => channel.close(),
            async commit(paths: readonly string[]) {
              const at = await channel.commit(paths);
              provisionCommitted(paths);
              return at;
            },
          };
        },
      }),
    };
    return wrapped;
  };
}
