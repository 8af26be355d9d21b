/**
 * The bench's stand-in for a remote machine: the local adapter with a fixed delay before every
 * operation, so fan-out and rendering are measured against round trips, not against a disk.
 * A wrapper here, not an option of the production adapter.
 */
import type { Transport } from '../../../src/mesh/transport.js';

export function withLatency(latencyMs: number): (transport: Transport) => Transport {
  const delay = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, latencyMs);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason as Error)), {
        once: true,
      });
    });
  return (transport) => ({
    machine: transport.machine,
    resolve: async (signal) => (await delay(signal), transport.resolve(signal)),
    stage: async (files, signal) => (await delay(signal), transport.stage(files, signal)),
    commit: async (paths, signal) => (await delay(signal), transport.commit(paths, signal)),
    unstage: async (paths, signal) => (await delay(signal), transport.unstage(paths, signal)),
    keepPrevious: async (paths, signal) => (await delay(signal), transport.keepPrevious(paths, signal)),
    restorePrevious: async (paths, signal) => (await delay(signal), transport.restorePrevious(paths, signal)),
    discardPrevious: async (paths, signal) => (await delay(signal), transport.discardPrevious(paths, signal)),
    retire: async (paths, signal) => (await delay(signal), transport.retire(paths, signal)),
    digests: async (paths, signal) => (await delay(signal), transport.digests(paths, signal)),
    readTexts: async (paths, signal) => (await delay(signal), transport.readTexts(paths, signal)),
    writeRecords: async (records, signal) => (await delay(signal), transport.writeRecords(records, signal)),
    writeRecordsThen: async (records, step, signal) => (
      await delay(signal),
      transport.writeRecordsThen(records, step, signal)
    ),
    lock: async (dir, holder, signal) => (await delay(signal), transport.lock(dir, holder, signal)),
  });
}
