/**
 * Builds the transport an inventory machine names. The one place that knows both kinds, so
 * the rotation code never branches on how a holder is reached.
 */
import type { Machine } from '../mesh/inventory.js';
import { bindTransport, type Bounds } from './bound-transport.js';
import { localTransport } from './local-transport.js';
import { sshTransport, type SshTransportOptions } from './ssh-transport.js';
import type { BoundTransport, Transport, TransportFor } from '../mesh/transport.js';

export interface TransportOptions {
  readonly ssh?: SshTransportOptions;
  /**
   * Wraps each adapter before it is bound: how the drill takes a machine off the network and
   * the bench makes a local machine as slow as a remote one, without either living in the
   * production adapters.
   */
  readonly wrap?: (transport: Transport, machine: Machine) => Transport;
}

export function makeTransport(machine: Machine, options: TransportOptions = {}): Transport {
  const transport =
    machine.transport === 'local'
      ? localTransport(machine.name, machine.root)
      : sshTransport(machine.name, machine.ssh, options.ssh);
  return options.wrap ? options.wrap(transport, machine) : transport;
}

/**
 * A memoised lookup by machine name over an inventory's machines, every operation bounded by
 * `bounds` — the command's one timeout (`--timeout`) and its cancel signal.
 */
export function transportsFor(
  machines: readonly Machine[],
  bounds: Bounds,
  options: TransportOptions = {},
): TransportFor {
  const built = new Map<string, BoundTransport>();
  const byName = new Map(machines.map((m) => [m.name, m]));
  return (name) => {
    let transport = built.get(name);
    if (!transport) {
      const machine = byName.get(name);
      if (!machine) throw new Error(`no machine named ${name} in the inventory`);
      transport = bindTransport(makeTransport(machine, options), bounds);
      built.set(name, transport);
    }
    return transport;
  };
}
