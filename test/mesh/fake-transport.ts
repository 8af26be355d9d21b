/**
 * An in-memory holder for rule tests: files are a Map path → content, and every call is
 * recorded. It throws on anything a test did not arrange (a fault is opt-in per operation).
 */
import { secretDigest } from '../../src/mesh/digest.js';
import { TransportError, type BoundTransport } from '../../src/transport/transport.js';
import type { TransportFor } from '../../src/transport/make-transport.js';

export interface FakeMachine {
  readonly files: Map<string, string>;
  readonly calls: string[];
  unreachable?: string;
  failOn?: 'stage' | 'commit' | 'unstage';
  /** Runs after a successful commit (a fake provisioner writing its receipt). */
  afterCommit?: (paths: readonly string[], files: Map<string, string>) => void;
}

export function fakeMesh(names: readonly string[]): { machines: Record<string, FakeMachine>; transportFor: TransportFor; writes: () => number } {
  const machines: Record<string, FakeMachine> = {};
  for (const name of names) machines[name] = { files: new Map(), calls: [] };
  let writes = 0;
  const transportFor: TransportFor = (name) => {
    const m = machines[name];
    if (!m) throw new Error(`fake: no machine ${name}`);
    const gate = (op: string) => {
      m.calls.push(op);
      if (m.unreachable) throw new TransportError(name, m.unreachable);
      if (m.failOn === op) throw new TransportError(name, `${op} failed (injected)`);
    };
    const transport: BoundTransport = {
      machine: name,
      resolve: async () => gate('resolve'),
      stage: async (files) => {
        gate('stage');
        for (const f of files) {
          writes++;
          m.files.set(`${f.path}.next`, f.secret.reveal());
        }
        return files.map((f) => secretDigest(m.files.get(`${f.path}.next`)!));
      },
      commit: async (paths) => {
        gate('commit');
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
        gate('unstage');
        for (const p of paths) m.files.delete(`${p}.next`);
      },
      digests: async (paths) => {
        gate('digests');
        return paths.map((p) => {
          const live = m.files.get(p);
          const next = m.files.get(`${p}.next`);
          return { live: live === undefined ? undefined : secretDigest(live), next: next === undefined ? undefined : secretDigest(next) };
        });
      },
      readTexts: async (paths) => {
        gate('readTexts');
        return paths.map((p) => m.files.get(p));
      },
    };
    return transport;
  };
  return { machines, transportFor, writes: () => writes };
}
