import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { parseInventory, type Inventory } from '../../src/mesh/inventory.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import type { Sshd } from '../helpers/sshd.js';

/**
 * A mesh of `consumers` web machines using two providers on two db machines, plus one consumer
 * living on db1 itself (a machine that is provider and consumer at once).
 */
export function meshInventory(consumers = 3, transport: 'ssh' | 'local' = 'ssh', root = '/srv'): Inventory {
  const machines = ['db1', 'db2', ...Array.from({ length: consumers }, (_, i) => `web${i + 1}`)];
  const lines = [
    'mesh_dir: /var/lib/baton/mesh',
    'machines:',
    ...machines.map(
      (m) =>
        `  - { name: ${m}, address: ${transport === 'local' ? `${root}/${m}` : `${m}.internal`}, transport: ${transport} }`,
    ),
    'providers:',
    '  - { name: pg-main, machine: db1, kind: postgres }',
    '  - { name: pg-audit, machine: db2, kind: postgres }',
    'consumers:',
    ...Array.from(
      { length: consumers },
      (_, i) =>
        `  - { name: web${i + 1}-app, machine: web${i + 1}, reads: each-connection, uses: [pg-main, pg-audit] }`,
    ),
    '  - { name: backup, machine: db1, reads: each-connection, uses: [pg-main] }',
  ];
  return parseInventory(`${lines.join('\n')}\n`, `${root}/mesh.yaml`);
}

/**
 * Writes `<dir>/<file>` (mesh.yaml unless named) for a local mesh of db1 (pg-main) and `webs` web
 * consumers (two unless told), each machine a directory under `<dir>/machines/`, created here so
 * every holder resolves. With `provisionerRole`, the provisioner's own pair on db1 logs in as that
 * role (the superuser it creates roles with). Returns the file's path.
 */
export function writeLocalMesh(
  dir: string,
  options: { webs?: number; file?: string; provisionerRole?: string } = {},
): string {
  const webs = Array.from({ length: options.webs ?? 2 }, (_, i) => `web${i + 1}`);
  const machines = ['db1', ...webs];
  for (const m of machines) mkdirSync(path.join(dir, 'machines', m), { recursive: true });
  const file = path.join(dir, options.file ?? 'mesh.yaml');
  writeFileSync(
    file,
    [
      'machines:',
      ...machines.map((m) => `  - { name: ${m}, address: machines/${m}, transport: local }`),
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      ...webs.map((m) => `  - { name: ${m}-app, machine: ${m}, reads: each-connection, uses: [pg-main] }`),
      ...(options.provisionerRole === undefined
        ? []
        : [
            `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${options.provisionerRole} }`,
          ]),
      '',
    ].join('\n'),
  );
  return file;
}

/** `m01`, `m02`, …: the machines of an ssh fleet (sshFleetYaml), by index from 0. */
export const fleetMachine = (i: number): string => `m${String(i + 1).padStart(2, '0')}`;

/**
 * An ssh fleet on one test sshd: machine i (fleetMachine) at `127.0.0.1:<ports[i]>` with its
 * mesh_dir under `base`; m01 provides pg-main to `app<i+1>` on each other machine.
 */
export function sshFleetYaml(
  sshd: Pick<Sshd, 'user' | 'identity' | 'knownHosts'>,
  base: string,
  ports: readonly number[],
): string {
  return [
    `ssh: { user: ${sshd.user}, identity: ${sshd.identity}, known_hosts: ${sshd.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 60 }`,
    'machines:',
    ...ports.map(
      (port, i) =>
        `  - { name: ${fleetMachine(i)}, address: "127.0.0.1:${port}", transport: ssh, mesh_dir: ${base}/${fleetMachine(i)}/mesh }`,
    ),
    'providers:',
    '  - { name: pg-main, machine: m01, kind: postgres }',
    'consumers:',
    ...ports
      .slice(1)
      .map(
        (_, i) =>
          `  - { name: app${i + 2}, machine: ${fleetMachine(i + 1)}, reads: each-connection, uses: [pg-main] }`,
      ),
    '',
  ].join('\n');
}

/**
 * Two ssh "machines" on one test sshd (db1 provides pg-main; web1 consumes it twice), each with
 * its own mesh_dir under `base`. `ports` points a machine elsewhere (a closed port: unreachable).
 */
export function sshMeshInventory(
  sshd: Pick<Sshd, 'user' | 'port' | 'identity' | 'knownHosts'>,
  base: string,
  ports: { db1?: number; web1?: number } = {},
): Inventory {
  const machine = (name: string, port: number) =>
    `  - { name: ${name}, address: "${sshd.user}@127.0.0.1:${port}", transport: ssh, mesh_dir: ${base}/${name}/mesh }`;
  return parseInventory(
    [
      `ssh: { identity: ${sshd.identity}, known_hosts: ${sshd.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 3 }`,
      'machines:',
      machine('db1', ports.db1 ?? sshd.port),
      machine('web1', ports.web1 ?? sshd.port),
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
      '  - { name: web1-worker, machine: web1, reads: each-connection, uses: [pg-main] }',
      '',
    ].join('\n'),
    `${base}/mesh.yaml`,
  );
}

/**
 * Writes `<dir>/mesh.yaml` for one pair over ssh to the test sshd: db1 provides pg-main to
 * web1-app, each machine its own mesh_dir (`<dir>/<machine>/mesh`) and port (`portOf`, the sshd's
 * own unless told), every connection through the ssh `config` given (a delaying relay). With
 * `provisionerRole`, the provisioner's own pair on db1 as in writeLocalMesh. Returns the file's path.
 */
export function writeSshPair(
  dir: string,
  sshd: Pick<Sshd, 'user' | 'port' | 'identity' | 'knownHosts'>,
  options: { config: string; portOf?: (machine: string) => number; provisionerRole?: string },
): string {
  const file = path.join(dir, 'mesh.yaml');
  const portOf = options.portOf ?? (() => sshd.port);
  writeFileSync(
    file,
    [
      `ssh: { identity: ${sshd.identity}, known_hosts: ${sshd.knownHosts}, strict_host_key_checking: "yes", config: ${options.config}, connect_timeout: 10 }`,
      'machines:',
      ...['db1', 'web1'].map(
        (m) =>
          `  - { name: ${m}, address: "${sshd.user}@127.0.0.1:${portOf(m)}", transport: ssh, mesh_dir: ${path.join(dir, m, 'mesh')} }`,
      ),
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
      ...(options.provisionerRole === undefined
        ? []
        : [
            `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${options.provisionerRole} }`,
          ]),
      '',
    ].join('\n'),
  );
  return file;
}

/** An inventory's machines and one provider, for tests that add the consumers they examine. */
export const INVENTORY_HEAD = `
machines:
  - { name: db1, address: db1.internal, transport: ssh }
  - { name: web1, address: 10.0.0.5, transport: ssh }
providers:
  - { name: pg-main, machine: db1, kind: postgres }
`;

/** Where the inventory under test claims to come from (errors name it). */
export const INVENTORY_FILE = '/etc/baton/mesh.yaml';

/** The BatonError an inventory is refused with; fails the test when it is accepted. */
export function inventoryRefusal(yaml: string): BatonError {
  try {
    parseInventory(yaml, INVENTORY_FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return error as BatonError;
  }
  throw new Error('the inventory was accepted');
}

/**
 * Every pair of `plan` applied, written straight onto local paths (the machines' roots): the same
 * secret at both ends (0600) and the provider's receipt for it — a fleet `mesh status` reads as whole.
 */
export function writeAppliedPairs(plan: RotationPlan): void {
  for (const pair of plan.pairs) {
    const secret = `secret-of-${pair.key}`;
    for (const at of [pair.providerPath, pair.consumerPath]) {
      mkdirSync(path.dirname(at), { recursive: true });
      writeFileSync(at, secret, { mode: 0o600 });
    }
    mkdirSync(path.dirname(pair.receiptPath), { recursive: true });
    writeFileSync(
      pair.receiptPath,
      formatReceipt({ role: pair.role, digest: secretDigest(secret), applied_at: new Date().toISOString() }),
    );
  }
}
