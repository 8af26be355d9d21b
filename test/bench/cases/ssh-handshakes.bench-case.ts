/**
 * "ssh handshakes per rotation ÷ machines", against the real sshd the suite starts: a rotation of
 * one provider to nine consumers, each machine its own sshd port, with the command's connection
 * share (one master per machine) and, as the baseline, without it (a connection per operation).
 * Handshakes are counted from sshd's own "Connection from" log lines. Goal: 1.0.
 * Every machine is this host (its mesh_dir an absolute path here), so the stand-in provisioner
 * writes each provider's receipt before it is read, over ssh, as a real one would have.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openCommandTransports } from '../../../src/commands/command-transports.js';
import { runRotationPlain } from '../../../src/app/rotation-plain.js';
import { loadInventory } from '../../../src/mesh/inventory.js';
import { planRotation } from '../../../src/mesh/rotation-plan.js';
import type { TransportFor } from '../../../src/mesh/transport.js';
import { transportsFor } from '../../../src/transport/make-transport.js';
import { sshdUnavailable, startSshd } from '../../helpers/sshd.js';
import { withLiveProvisioner } from '../../mesh/receipt-writer.js';
import type { BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';

const MACHINES = 10;

export const sshHandshakesCase: BenchCase = {
  name: 'ssh-handshakes',
  async run(ctx) {
    const id = 'mesh.ssh-handshakes-per-machine';
    const title = 'ssh handshakes per rotation ÷ machines';
    const unavailable = sshdUnavailable();
    if (unavailable) return { figures: [], skipped: [{ id, title, reason: unavailable }] };
    const sshd = await startSshd({ extraPorts: MACHINES });
    try {
      const ports = sshd.ports.slice(1);
      const rotate = async (
        tag: string,
        transportFor: (machines: ReturnType<typeof loadInventory>['machines']) => {
          transportFor: TransportFor;
          close: () => Promise<void>;
        },
      ) => {
        const base = ctx.tempDir(`handshakes-${tag}`);
        const file = path.join(base, 'mesh.yaml');
        const name = (i: number) => `m${String(i + 1).padStart(2, '0')}`;
        mkdirSync(base, { recursive: true });
        writeFileSync(
          file,
          [
            `ssh: { user: ${sshd.user}, identity: ${sshd.identity}, known_hosts: ${sshd.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 60 }`,
            'machines:',
            ...ports.map(
              (port, i) =>
                `  - { name: ${name(i)}, address: "127.0.0.1:${port}", transport: ssh, mesh_dir: ${base}/${name(i)}/mesh }`,
            ),
            'providers:',
            '  - { name: pg, machine: m01, kind: postgres }',
            'consumers:',
            ...ports
              .slice(1)
              .map(
                (_, i) =>
                  `  - { name: app${i + 2}, machine: ${name(i + 1)}, reads: each-connection, uses: [pg] }`,
              ),
            '',
          ].join('\n'),
        );
        const inventory = loadInventory(file);
        const transports = transportFor(inventory.machines);
        const before = sshd.connections(ports);
        try {
          const { code } = await runRotationPlain({
            id: `bench-${tag}`,
            plan: planRotation(inventory, { by: 'provider', name: 'pg' }),
            yes: true,
            write: () => undefined,
            deps: {
              transportFor: withLiveProvisioner(transports.transportFor, () => '/'),
              journalDir: path.join(base, 'journal'),
              operator: 'bench',
              resolve: { concurrency: 8 },
              concurrency: 8,
              waitMs: 0,
              pollMs: 100,
            },
          });
          if (code !== 0) throw new Error(`the ${tag} rotation exited ${code}`);
        } finally {
          await transports.close();
        }
        // sshd logs the accept a moment after it happens.
        await new Promise((r) => setTimeout(r, 500));
        return (sshd.connections(ports) - before) / MACHINES;
      };
      ctx.log(`ssh-handshakes: a rotation to ${MACHINES} machines on a real sshd, shared and unshared`);
      const shared = await rotate('shared', (machines) =>
        openCommandTransports(machines, { timeoutMs: 120_000, noSignalHandlers: true }),
      );
      const unshared = await rotate('unshared', (machines) => ({
        transportFor: transportsFor(machines, { timeoutMs: 120_000 }),
        close: async () => undefined,
      }));
      return {
        figures: [
          figure({
            id,
            title,
            measured: {
              label: `rotation with one shared connection per machine (${MACHINES} machines)`,
              value: shared,
              unit: 'handshakes/machine',
            },
            baseline: {
              label: 'the same rotation, one connection per operation',
              value: unshared,
              unit: 'handshakes/machine',
            },
            goal: { kind: 'absolute', max: 1, unit: 'handshakes/machine' },
            notes: [
              'counted from sshd "Connection from" log lines (LogLevel VERBOSE); resolve + prepare + commit, --wait 0',
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      await sshd.stop();
    }
  },
};
