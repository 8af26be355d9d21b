/**
 * An in-memory holder for rule tests: files are a Map path → content, and every call is
 * recorded. STRICT: a call to a machine the plan does not name as a holder, or on a path the
 * plan does not deliver there (or its receipt), throws an UnarrangedCall — a rotation that
 * touched a file it should not have fails its test instead of passing on a forgiving fake.
 * Faults are opt-in per machine and operation.
 */
import { sessionsPath } from '../../src/mesh/session-record.js';
import { conninfoLogin, LOGIN_SLOTS, loginRole } from '../../src/mesh/alternating.js';
import path from 'node:path';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import {
  previousPath,
  recordsThenInTurn,
  recordPath,
  rolledBackPath,
  TransportError,
  type BoundTransport,
} from '../../src/mesh/transport.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { providerFilesOf, type RotationPlan } from '../../src/mesh/rotation-plan.js';

/** A call the test did not arrange: a bug in the code under test (or the test), never a fault. */
export class UnarrangedCall extends Error {
  override readonly name = 'UnarrangedCall';
}

export interface FakeMachine {
  readonly files: Map<string, string>;
  readonly calls: string[];
  unreachable?: string;
  failOn?: 'stage' | 'commit' | 'unstage' | 'keepPrevious' | 'restorePrevious' | 'retire';
  /** Runs after a successful commit (a fake provisioner writing its receipt). */
  afterCommit?: (paths: readonly string[], files: Map<string, string>) => void;
}

export interface FakeMesh {
  readonly machines: Record<string, FakeMachine>;
  readonly transportFor: TransportFor;
  writes(): number;
  /** Every unarranged call, also thrown where it happened (a flow may turn it into a failure). */
  readonly unarranged: string[];
}

/**
 * `names` are the machines that exist (an inventory may name more than the plan touches);
 * `plan` arranges what each holder may be asked about: the paths it receives, and for a
 * provider end the receipt the provisioner writes; `also`, per machine, any further paths.
 */
export function fakeMesh(
  names: readonly string[],
  plan: RotationPlan,
  also: Readonly<Record<string, readonly string[]>> = {},
): FakeMesh {
  const machines: Record<string, FakeMachine> = {};
  for (const name of names) machines[name] = { files: new Map(), calls: [] };
  const arranged = new Map<string, Set<string>>();
  for (const holder of plan.holders) {
    const paths = new Set(holder.receives.map((d) => d.path));
    for (const pair of plan.pairs) {
      if (pair.providerMachine !== holder.machine) continue;
      paths.add(pair.receiptPath);
      // Every provider-end file the pair may have (either mode, either login) and its receipt:
      // a rotation reads them all, and a switch removes the other mode's.
      for (const p of providerFilesOf(pair))
        paths.add(p).add(path.join(path.dirname(p), '.applied', path.basename(p)));
      // The session census of each login the pair has (mesh status reads it beside the receipts).
      for (const login of [pair.role, ...LOGIN_SLOTS.map((slot) => loginRole(pair.role, slot))])
        paths.add(sessionsPath(pair.receiptPath, login));
    }
    // Each arranged path's rotation record, and the lock of each provider directory.
    for (const p of [...paths]) paths.add(recordPath(p));
    for (const pair of plan.pairs)
      if (pair.providerMachine === holder.machine) paths.add(path.dirname(pair.providerPath));
    arranged.set(holder.machine, paths);
  }
  // Paths outside the plan a test arranges too (a revoke's left login files, on a provider machine).
  for (const [machine, paths] of Object.entries(also))
    arranged.set(machine, new Set([...(arranged.get(machine) ?? []), ...paths]));
  const unarranged: string[] = [];
  const refuse = (what: string): never => {
    unarranged.push(what);
    throw new UnarrangedCall(`fake transport: unarranged call: ${what}`);
  };
  let writes = 0;
  /** Held provider locks, `machine\0dir` → the holder's words (shared by every transport of this mesh). */
  const locks = new Map<string, string>();
  const transportFor: TransportFor = (name) => {
    const m = machines[name];
    if (!m) return refuse(`no machine named ${name}`);
    const gate = (op: string, paths: readonly string[] = []) => {
      const allowed = arranged.get(name);
      if (!allowed) refuse(`${op} on ${name}, which the plan does not name as a holder`);
      for (const p of paths)
        if (!allowed!.has(p)) refuse(`${op} of ${p} on ${name}, which the plan does not deliver there`);
      m.calls.push(op);
      if (m.unreachable) throw new TransportError(name, m.unreachable);
      if (m.failOn === op) throw new TransportError(name, `${op} failed (injected)`);
    };
    const transport: BoundTransport = {
      machine: name,
      resolve: async () => gate('resolve'),
      stage: async (files) => {
        gate(
          'stage',
          files.map((f) => f.path),
        );
        for (const f of files) {
          writes++;
          m.files.set(`${f.path}.next`, f.secret.reveal());
        }
        return files.map((f) => secretDigest(m.files.get(`${f.path}.next`)!));
      },
      commit: async (paths) => {
        gate('commit', paths);
        for (const p of paths) {
          const next = m.files.get(`${p}.next`);
          if (next === undefined) throw new TransportError(name, `no staged file ${p}.next`);
          writes++;
          m.files.set(p, next);
          m.files.delete(`${p}.next`);
        }
        m.afterCommit?.(paths, m.files);
      },
      unstage: async (paths) => {
        gate('unstage', paths);
        for (const p of paths) m.files.delete(`${p}.next`);
      },
      keepPrevious: async (paths) => {
        gate('keepPrevious', paths);
        return paths.map((p) => {
          const live = m.files.get(p);
          // An empty previous file stands for "none was live", as on a real holder.
          m.files.set(previousPath(p), live ?? '');
          return live === undefined ? undefined : secretDigest(live);
        });
      },
      restorePrevious: async (paths) => {
        gate('restorePrevious', paths);
        return paths.map((p) => {
          const prev = m.files.get(previousPath(p));
          if (prev === undefined) return false;
          if (prev === '') m.files.delete(p);
          else m.files.set(p, prev);
          m.files.delete(previousPath(p));
          m.files.delete(path.join(path.dirname(p), '.applied', path.basename(p)));
          return true;
        });
      },
      discardPrevious: async (paths) => {
        gate('discardPrevious', paths);
        for (const p of paths) m.files.delete(previousPath(p));
      },
      retire: async (paths) => {
        gate('retire', paths);
        for (const p of paths) {
          for (const f of [
            p,
            `${p}.next`,
            previousPath(p),
            rolledBackPath(p),
            path.join(path.dirname(p), '.applied', path.basename(p)),
          ])
            m.files.delete(f);
        }
      },
      digests: async (paths) => {
        gate('digests', paths);
        return paths.map((p) => {
          const live = m.files.get(p);
          const next = m.files.get(`${p}.next`);
          const prev = m.files.get(previousPath(p));
          const login = live === undefined ? undefined : conninfoLogin(live);
          return {
            live: live === undefined ? undefined : secretDigest(live),
            next: next === undefined ? undefined : secretDigest(next),
            ...(prev === undefined ? {} : { prev: secretDigest(prev) }),
            ...(login ? { liveLogin: login } : {}),
            ...(m.files.has(recordPath(p)) ? { record: m.files.get(recordPath(p))! } : {}),
            ...(locks.has(`${name}\0${path.dirname(p)}`)
              ? { lockedBy: locks.get(`${name}\0${path.dirname(p)}`)! }
              : {}),
          };
        });
      },
      writeRecords: async (records) => {
        gate(
          'writeRecords',
          records.map((r) => r.path),
        );
        for (const r of records) m.files.set(r.path, r.text);
      },
      // As the calls it stands for, each one counted and failed on its own: through `this`, so a
      // test's copy that replaces one of them (`{ ...t, writeRecords }`) is heard here too.
      writeRecordsThen(records, step) {
        return recordsThenInTurn(this, records, step);
      },
      lock: async (dir, holder) => {
        gate('lock', [dir]);
        const key = `${name}\0${dir}`;
        if (locks.has(key)) return { taken: false, holder: locks.get(key) };
        locks.set(key, holder);
        let released = false;
        return {
          taken: true,
          release: async () => {
            if (released) return;
            released = true;
            locks.delete(key);
          },
        };
      },
      readTexts: async (paths) => {
        gate('readTexts', paths);
        return paths.map((p) => m.files.get(p));
      },
    };
    return transport;
  };
  return { machines, transportFor, writes: () => writes, unarranged };
}

/** A provisioner on a fake machine: every provider end renamed into place gets its receipt at once. */
export function provisionerOn(machine: FakeMachine): void {
  machine.afterCommit = (paths, files) => {
    for (const p of paths) {
      if (!p.includes('/provides/')) continue;
      const role = path.basename(p);
      files.set(
        path.join(path.dirname(p), '.applied', role),
        formatReceipt({ role, digest: secretDigest(files.get(p)!), applied_at: new Date().toISOString() }),
      );
    }
  };
}

/** Every machine's files but the rotation records, as one string: "nothing else changed". */
export function filesWithoutRecords(mesh: FakeMesh): string {
  return JSON.stringify(
    Object.entries(mesh.machines).map(([n, m]) => [
      n,
      [...m.files].filter(([p]) => !p.endsWith('.rotation')),
    ]),
  );
}

/** The phase each provider intent on the fake machines says: pair → phase. */
export function intentPhasesOf(mesh: FakeMesh): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of Object.values(mesh.machines))
    for (const [p, text] of m.files)
      if (p.endsWith('.rotation')) {
        const r = JSON.parse(text) as Record<string, unknown>;
        if (r.end === 'provides') out[String(r.pair)] = r.phase;
      }
  return out;
}
