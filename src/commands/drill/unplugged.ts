/**
 * How the drill takes a machine off the network: a marker file in its sandbox root, honoured
 * by a wrapper the drill puts around its transports — never by the production adapter, which
 * must not let a stray file make a real holder "unreachable".
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { Machine } from '../../mesh/inventory.js';
import { TransportError, type Transport } from '../../mesh/transport.js';

export const UNPLUGGED_MARKER = '.baton-unreachable';

/** The transport as it is, unless the machine's root holds the marker: then every operation fails. */
export function unpluggable(transport: Transport, machine: Machine): Transport {
  if (machine.transport !== 'local') return transport;
  const marker = path.join(machine.root, UNPLUGGED_MARKER);
  const gate = async () => {
    const marked = await lstat(marker).then(
      () => true,
      () => false,
    );
    if (marked) throw new TransportError(machine.name, `unplugged by the drill (${marker})`);
  };
  // The app's part (a consumer's reload:, a test login) goes through the same gate: a wrapper
  // that left them out made every reload in the drill fail with "cannot run commands".
  return {
    ...(transport.runCommand
      ? { runCommand: async (request, signal) => (await gate(), transport.runCommand!(request, signal)) }
      : {}),
    ...(transport.openStream
      ? {
          openStream: async (host, port, signal) => (await gate(), transport.openStream!(host, port, signal)),
        }
      : {}),
    machine: transport.machine,
    resolve: async (signal) => (await gate(), transport.resolve(signal)),
    stage: async (files, signal) => (await gate(), transport.stage(files, signal)),
    commit: async (paths, signal) => (await gate(), transport.commit(paths, signal)),
    unstage: async (paths, signal) => (await gate(), transport.unstage(paths, signal)),
    keepPrevious: async (paths, signal) => (await gate(), transport.keepPrevious(paths, signal)),
    restorePrevious: async (paths, signal) => (await gate(), transport.restorePrevious(paths, signal)),
    discardPrevious: async (paths, signal) => (await gate(), transport.discardPrevious(paths, signal)),
    retire: async (paths, signal) => (await gate(), transport.retire(paths, signal)),
    digests: async (paths, signal) => (await gate(), transport.digests(paths, signal)),
    readTexts: async (paths, signal) => (await gate(), transport.readTexts(paths, signal)),
    writeRecords: async (records, signal) => (await gate(), transport.writeRecords(records, signal)),
    writeRecordsThen: async (records, step, signal) => (
      await gate(),
      transport.writeRecordsThen(records, step, signal)
    ),
    lock: async (dir, holder, signal) => (await gate(), transport.lock(dir, holder, signal)),
  };
}
