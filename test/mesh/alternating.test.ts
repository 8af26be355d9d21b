import { describe, expect, it } from 'vitest';
import {
  alternatingRoleProblem,
  conninfoLogin,
  formatConsumerConninfo,
  loginFileName,
  loginRole,
  otherSlot,
  parseConninfo,
  parseLoginFileName,
  slotOfLogin,
} from '../../src/mesh/alternating.js';
import { parseInventory } from '../../src/mesh/inventory.js';

import {
  INVENTORY_FILE as FILE,
  INVENTORY_HEAD as base,
  inventoryRefusal as refusal,
} from './mesh-fixture.js';

describe('alternating names', () => {
  it('names the two logins of a group and the provider-end file of each', () => {
    expect(loginRole('web1_app', 'a')).toBe('web1_app_a');
    expect(otherSlot('a')).toBe('b');
    expect(loginFileName('web1_app', 'b')).toBe('web1_app+b');
    expect(parseLoginFileName('web1_app+b')).toEqual({ group: 'web1_app', slot: 'b', login: 'web1_app_b' });
    expect(slotOfLogin('web1_app', 'web1_app_a')).toBe('a');
    expect(slotOfLogin('web1_app', 'web1_app')).toBeUndefined();
  });

  it('reads no other name as a login file: a plain role, a third slot, a bad group, a staged file', () => {
    for (const name of ['web1_app', 'web1_app+c', 'Web1+a', 'web1_app+a.next', '+a', `${'x'.repeat(62)}+a`]) {
      expect(parseLoginFileName(name), name).toBeUndefined();
    }
  });

  it('refuses a group whose logins would not fit in 63 bytes', () => {
    expect(alternatingRoleProblem('x'.repeat(61))).toBeUndefined();
    expect(alternatingRoleProblem('x'.repeat(62))).toMatch(/longer than 63 bytes/);
  });
});

describe('the consumer end of an alternating pair', () => {
  it('is libpq keyword/value with the login first, and reads back by libpq rules', () => {
    const text = formatConsumerConninfo('web1_app_a', "s3cr'et\\x");
    expect(text).toBe("user=web1_app_a password='s3cr\\'et\\\\x'");
    expect(parseConninfo(text)).toEqual({ user: 'web1_app_a', password: "s3cr'et\\x" });
    expect(conninfoLogin(text)).toBe('web1_app_a');
  });

  it('accepts libpq spellings: spaces around =, bare values, escapes in bare values', () => {
    expect(parseConninfo("  user = web1_app_b   password=a\\ b host='db 1'")).toEqual({
      user: 'web1_app_b',
      password: 'a b',
      host: 'db 1',
    });
  });

  it('does not take a single role file (the bare secret) or a broken string for a login', () => {
    for (const text of ['Zk3J-8aQ_base64url', "user=x password='open", 'user=x', '=x', ''])
      expect(conninfoLogin(text), text).toBeUndefined();
  });
});

describe('credential: alternating in the inventory', () => {
  it('is per consumer, or per provider for all its consumers; the consumer wins; single by default', () => {
    const inv = parseInventory(
      `
machines:
  - { name: db1, address: db1.internal, transport: ssh }
  - { name: web1, address: 10.0.0.5, transport: ssh }
providers:
  - { name: pg-main, machine: db1, kind: postgres, credential: alternating }
  - { name: pg-two, machine: db1, kind: postgres }
consumers:
  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main, pg-two] }
  - { name: web2-app, machine: web1, reads: each-connection, uses: [pg-main], credential: single }
  - { name: web3-app, machine: web1, reads: each-connection, uses: [pg-two], credential: alternating }
`,
      FILE,
    );
    expect(inv.pairs.map((p) => `${p.provider}:${p.consumer}=${p.credential}`)).toEqual([
      'pg-main:web1-app=alternating',
      'pg-two:web1-app=single',
      'pg-main:web2-app=single',
      'pg-two:web3-app=alternating',
    ]);
  });

  it('refuses a role too long for its logins, naming the consumer and the file (exit 2)', () => {
    const error = refusal(
      `${base}consumers:\n  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main], credential: alternating, role: ${'r'.repeat(62)} }\n`,
    );
    expect(error.exitCode).toBe(2);
    expect(error.what).toContain('consumer "web1-app"');
    expect(error.what).toContain('longer than 63 bytes');
    expect(error.where).toBe(FILE);
  });

  it('refuses a login that collides with another pair’s role on the same provider', () => {
    const error = refusal(
      `${base}consumers:\n  - { name: web1, machine: web1, reads: each-connection, uses: [pg-main], credential: alternating }\n  - { name: web1_a, machine: web1, uses: [pg-main] }\n`,
    );
    expect(error.exitCode).toBe(2);
    expect(error.what).toBe(
      'consumers "web1" and "web1_a" both map to role "web1_a" on provider "pg-main" (an alternating login of "web1", consumer "web1").',
    );
    // The same names on two providers are two databases' roles: no collision.
    expect(() =>
      parseInventory(
        `${base}  - { name: pg-two, machine: db1, kind: postgres }\nconsumers:\n  - { name: web1, machine: web1, reads: each-connection, uses: [pg-main], credential: alternating }\n  - { name: web1_a, machine: web1, uses: [pg-two] }\n`,
        FILE,
      ),
    ).not.toThrow();
  });

  it('refuses an unknown mode by name', () => {
    const error = refusal(
      `${base}consumers:\n  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main], credential: both }\n`,
    );
    expect(error.what).toMatch(/credential/);
  });
});
