import { describe, expect, it } from 'vitest';
import { parseInventory, parseSshAddress } from '../../src/mesh/inventory.js';
import { deriveRoleName } from '../../src/mesh/role-name.js';

import {
  INVENTORY_FILE as FILE,
  INVENTORY_HEAD as base,
  inventoryRefusal as refusal,
} from './mesh-fixture.js';

describe('inventory', () => {
  it('derives each pair role from the consumer name, lowercased, with every other character made _', () => {
    const inv = parseInventory(
      `${base}consumers:\n  - { name: Web1-App.v2, machine: web1, reads: each-connection, uses: [pg-main] }\n`,
      FILE,
    );
    expect(inv.pairs).toEqual([
      {
        provider: 'pg-main',
        consumer: 'Web1-App.v2',
        role: 'web1_app_v2',
        providerMachine: 'db1',
        consumerMachine: 'web1',
        credential: 'single',
      },
    ]);
    expect(deriveRoleName('web1-app')).toBe('web1_app');
  });

  it('uses an explicit role instead of the derived one', () => {
    const inv = parseInventory(
      `${base}consumers:\n  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main], role: legacy_web }\n`,
      FILE,
    );
    expect(inv.pairs[0]!.role).toBe('legacy_web');
  });

  it('refuses a consumer on a machine the inventory does not list, naming file, consumer and machine', () => {
    const e = refusal(
      `${base}consumers:\n  - { name: web9-app, machine: web9, reads: each-connection, uses: [pg-main] }\n`,
    );
    expect(e.code).toBe('config');
    expect(e.where).toBe(FILE);
    expect(e.what).toContain('consumer "web9-app"');
    expect(e.what).toContain('"web9"');
    expect(e.next).toContain('db1, web1');
  });

  it('refuses duplicate machine names', () => {
    const e = refusal(
      `machines:\n  - { name: db1, address: a, transport: ssh }\n  - { name: db1, address: b, transport: ssh }\n`,
    );
    expect(e.what).toBe('Duplicate machine name "db1".');
  });

  it('refuses two consumers whose roles collide on one provider, naming both and the role', () => {
    const e = refusal(
      `${base}consumers:\n  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }\n  - { name: web1_app, machine: web1, uses: [pg-main] }\n`,
    );
    expect(e.what).toContain('"web1-app" and "web1_app"');
    expect(e.what).toContain('role "web1_app" on provider "pg-main"');
  });

  it('refuses a consumer that uses an unknown provider', () => {
    const e = refusal(
      `${base}consumers:\n  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-other] }\n`,
    );
    expect(e.what).toContain('uses provider "pg-other"');
  });

  it('refuses a transport it does not know, naming the entry', () => {
    const e = refusal(`machines:\n  - { name: db1, address: a, transport: telnet }\n`);
    expect(e.what).toContain('machines[0] ("db1").transport');
  });

  it('refuses a role that is not a PostgreSQL identifier, and one longer than 63 bytes', () => {
    expect(
      refusal(
        `${base}consumers:\n  - { name: 1web, machine: web1, reads: each-connection, uses: [pg-main] }\n`,
      ).what,
    ).toContain('not a PostgreSQL identifier');
    expect(
      refusal(
        `${base}consumers:\n  - { name: w, machine: web1, reads: each-connection, uses: [pg-main], role: ${'a'.repeat(64)} }\n`,
      ).what,
    ).toContain('longer than 63 bytes');
  });

  it('refuses unknown fields and invalid YAML with the file named', () => {
    expect(refusal(`${base}extra: 1\n`).what).toContain('Unknown field "extra"');
    expect(refusal('machines: [').where).toBe(FILE);
  });

  it('reads ssh addresses with user and port, and local addresses relative to the file', () => {
    expect(parseSshAddress('root@127.0.0.1:2222')).toEqual({ host: '127.0.0.1', user: 'root', port: 2222 });
    expect(parseSshAddress('deploy@[::1]:22')).toEqual({ host: '::1', user: 'deploy', port: 22 });
    expect(parseSshAddress('db1.internal')).toEqual({
      host: 'db1.internal',
      user: undefined,
      port: undefined,
    });
    expect(typeof parseSshAddress('a:b:c')).toBe('string');
    const inv = parseInventory(
      `ssh: { known_hosts: kh, port: 2200 }\nmachines:\n  - { name: db1, address: admin@db1, transport: ssh, identity: keys/id }\n  - { name: web1, address: machines/web1, transport: local }\n`,
      '/srv/drill/mesh.yaml',
    );
    const [db1, web1] = inv.machines;
    expect(db1).toMatchObject({
      transport: 'ssh',
      ssh: {
        host: 'db1',
        user: 'admin',
        port: 2200,
        identity: '/srv/drill/keys/id',
        knownHosts: '/srv/drill/kh',
      },
    });
    expect(web1).toMatchObject({
      transport: 'local',
      root: '/srv/drill/machines/web1',
      meshDir: '/var/lib/baton/mesh',
    });
  });
});

describe('values from the inventory quoted in a refusal', () => {
  const OBEYED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;
  const refusal = (yaml: string): string => {
    try {
      parseInventory(yaml, '/srv/mesh.yaml');
    } catch (error) {
      return (error as Error & { what: string }).what;
    }
    throw new Error('the inventory was accepted');
  };

  it('are shown escaped: a machine reference, a path, an unknown key or a name never draws a line', () => {
    const machines = 'machines:\n  - { name: db1, address: machines/db1, transport: local }\n';
    const cases: readonly [string, string][] = [
      [
        `${machines}providers:\n  - { name: pg, machine: "db1\\r\\nNext: baton sync --force\\e[8m", kind: postgres }\nconsumers: []\n`,
        'provider "pg" is on machine "db1\\r\\nNext: baton sync --force\\x1b[8m", which the inventory does not list.',
      ],
      [`mesh_dir: "rel\\u202eative"\n${machines}`, 'mesh_dir "rel\\u202eative" is not an absolute path.'],
      [`${machines}"evil\\nkey": 1\n`, 'Unknown field "evil\\nkey" in the inventory.'],
      [
        'machines:\n  - { name: "db\\e[2J", address: x, transport: local }\n',
        'machines[0] ("db\\x1b[2J").name is invalid',
      ],
    ];
    for (const [yaml, words] of cases) {
      const what = refusal(yaml);
      expect(what).not.toMatch(OBEYED);
      expect(what).toContain(words);
    }
  });
});
