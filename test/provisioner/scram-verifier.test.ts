import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { scramMatches, scramVerifier } from '../../src/provisioner/scram-verifier.js';
import pg from 'pg';
import { passwordStatement } from '../../src/provisioner/postgres-roles.js';
import { deliveredRoleProblem, secretProblem } from '../../src/provisioner/delivered-credentials.js';

// RFC 7677 §3: user "user", password "pencil", the exchange's nonces, salt and proofs.
const RFC = {
  password: 'pencil',
  salt: 'W22ZaJ0SNY7soEsUEjb6gQ==',
  authMessage:
    'n=user,r=rOprNGfwEbeRWgbNEkqO,' +
    'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,' +
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  clientProof: 'dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverSignature: '6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

function parseVerifier(verifier: string) {
  const match = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(
    verifier,
  );
  if (!match) throw new Error(`not a verifier: ${verifier}`);
  return {
    iterations: Number(match[1]),
    salt: match[2]!,
    storedKey: Buffer.from(match[3]!, 'base64'),
    serverKey: Buffer.from(match[4]!, 'base64'),
  };
}

describe('scramVerifier', () => {
  it("yields the keys that verify RFC 7677's client proof and reproduce its server signature", async () => {
    const verifier = await scramVerifier(Buffer.from(RFC.password), Buffer.from(RFC.salt, 'base64'));
    const { iterations, salt, storedKey, serverKey } = parseVerifier(verifier);
    expect({ iterations, salt }).toEqual({ iterations: 4096, salt: RFC.salt });
    // The server's check: ClientKey = proof XOR HMAC(StoredKey, AuthMessage); SHA-256(ClientKey) = StoredKey.
    const clientSignature = createHmac('sha256', storedKey).update(RFC.authMessage).digest();
    const clientKey = Buffer.from(
      Buffer.from(RFC.clientProof, 'base64').map((byte, i) => byte ^ clientSignature[i]!),
    );
    expect(createHash('sha256').update(clientKey).digest().equals(storedKey)).toBe(true);
    expect(createHmac('sha256', serverKey).update(RFC.authMessage).digest('base64')).toBe(
      RFC.serverSignature,
    );
  });

  it('salts every verifier afresh and never contains the secret', async () => {
    const secret = 'correct-horse-battery-staple';
    const a = await scramVerifier(Buffer.from(secret));
    const b = await scramVerifier(Buffer.from(secret));
    expect(a).not.toBe(b);
    expect(parseVerifier(a).salt).toHaveLength(24);
    expect(a).not.toContain(secret);
  });
});

describe('scramMatches', () => {
  it('recognises a verifier made from the secret with any salt, and refuses another secret, an MD5 hash, a torn verifier and none', async () => {
    const secret = Buffer.from('correct-horse-battery-staple');
    const verifier = await scramVerifier(secret);
    expect(await scramMatches(verifier, secret)).toBe(true);
    expect(
      await scramMatches(await scramVerifier(secret, Buffer.from(RFC.salt, 'base64'), 1024), secret),
    ).toBe(true);
    expect(await scramMatches(verifier, Buffer.from('correct-horse-battery-stapler'))).toBe(false);
    expect(await scramMatches('md5' + 'a'.repeat(32), secret)).toBe(false);
    expect(await scramMatches(verifier.slice(0, -4), secret)).toBe(false);
    expect(await scramMatches(null, secret)).toBe(false);
  });

  it('checks RFC 7677\'s own user: the verifier its salt gives "pencil" matches "pencil" only', async () => {
    const verifier = await scramVerifier(Buffer.from(RFC.password), Buffer.from(RFC.salt, 'base64'));
    expect(await scramMatches(verifier, Buffer.from('pencil'))).toBe(true);
    expect(await scramMatches(verifier, Buffer.from('pencil2'))).toBe(false);
  });
});

describe('role names and SQL quoting', () => {
  it.each(['web1_app', '_x', 'postgres', 'x'.repeat(63), 'web1_app+a', 'web1_app+b'])(
    'accepts %s as a delivered role or login file',
    (name) => {
      expect(deliveredRoleProblem(name)).toBeUndefined();
    },
  );

  it.each([
    ['', 'not a PostgreSQL identifier'],
    ['Web1', 'not a PostgreSQL identifier'],
    ['1web', 'not a PostgreSQL identifier'],
    ['web1-app', 'not a PostgreSQL identifier'],
    ['a"; DROP ROLE postgres; --', 'not a PostgreSQL identifier'],
    ['é', 'not a PostgreSQL identifier'],
    ['x'.repeat(64), 'longer than 63 bytes'],
    ['pg_monitor2', 'reserved'],
    ['web1_app+c', 'not a PostgreSQL identifier'],
    ['Web1+a', 'a login file whose role "Web1" is not a PostgreSQL identifier'],
    [`${'x'.repeat(62)}+a`, 'is too long for alternating logins'],
  ])('refuses %j as a delivered role, saying why', (name, why) => {
    expect(deliveredRoleProblem(name)).toContain(why);
  });

  it('quotes identifiers and literals by doubling their quotes, and refuses a backslash or NUL in a literal', () => {
    expect(passwordStatement('alter', 'we"b', "SCRAM'x", pg)).toBe(
      `ALTER ROLE "we""b" LOGIN PASSWORD 'SCRAM''x'`,
    );
    expect(passwordStatement('alter', 'web1_app', 'SCRAM-SHA-256$x', pg, { clearExpiry: true })).toBe(
      `ALTER ROLE "web1_app" LOGIN PASSWORD 'SCRAM-SHA-256$x' VALID UNTIL 'infinity'`,
    );
    expect(passwordStatement('create', 'web1_app', 'SCRAM-SHA-256$x', pg)).toBe(
      `CREATE ROLE "web1_app" LOGIN PASSWORD 'SCRAM-SHA-256$x'`,
    );
    expect(() => passwordStatement('alter', 'web1_app', 'a\\b', pg)).toThrow(/backslash/);
    expect(() => passwordStatement('alter', 'web1_app', 'a\0b', pg)).toThrow(/NUL/);
  });
});

describe('secretProblem', () => {
  it('accepts printable ASCII and names an empty file, a line break and other bytes', () => {
    expect(secretProblem(Buffer.from('abc DEF-_+/=~'))).toBeUndefined();
    expect(secretProblem(Buffer.alloc(0))).toBe('is empty');
    expect(secretProblem(Buffer.from('secret\n'))).toContain('line break');
    expect(secretProblem(Buffer.from('sécret'))).toContain('outside printable ASCII');
  });
});
