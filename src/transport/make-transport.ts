/**
 * Builds the transport an inventory machine names. The one place that knows both kinds, so
 * the rotation code never branches on how a holder is reached.
 */
import type { Machine } from '../mesh/inventory.js';
import { localTransport, type LocalTransportOptions } from './local-transport.js';
import { sshTransport, type SshTransportOptions } from './ssh-transport.js';
import type { Transport, TransportFor } from '../mesh/transport.js';


export interface TransportOptions {
  readonly local?: LocalTransportOptions;
  readonly ssh?: SshTransportOptions;
}

export function makeTransport(machine: Machine, options: TransportOptions = {}): Transport {
  return machine.transport === 'local'
    ? localTransport(machine.name, machine.root, options.local)
    : sshTransport(machine.name, machine.ssh, options.ssh);
}

/** A memoised lookup by machine name over an inventory's machines. */
export function transportsFor(machines: readonly Machine[], options: TransportOptions = {}): TransportFor {
  const built = new Map<string, Transport>();
  const byName = new Map(machines.map((m) => [m.name, m]));
  return (name) => {
    let transport = built.get(name);
    if (!transport) {
      const machine = byName.get(name);
      if (!machine) throw new Error(`no machine named ${name} in the inventory`);
      transport = makeTransport(machine, options);
      built.set(name, transport);
    }
    return transport;
  };
}
