/**
 * The memory of proved pairs (src/pki/checked-pairs.ts) answers only for exactly the bytes and
 * the deployment it proved: anything else is checked in full, so a key swapped in, a certificate
 * edited or another deployment is refused as before — and nothing but a pass is remembered.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintCa } from '../../src/pki/mint-ca.js';
import { inspectPair } from '../../src/pki/inspect-pair.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const temp = makeTempDir('baton-checked-pairs-');
const before = process.env.XDG_CACHE_HOME;
const entries = () => {
  try {
    return readdirSync(path.join(temp.dir, 'baton', 'checked-pairs'));
  } catch {
    return [];
  }
};
beforeAll(() => {
  process.env.XDG_CACHE_HOME = temp.dir;
});
afterAll(() => {
  if (before === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = before;
  temp.cleanup();
});

describe('a pair proved once', () => {
  it('is remembered after it passed, and answered again with the same facts', async () => {
    const minted = await mintCa({ deployment: DEPLOYMENT, now: new Date() });
    const first = await inspectPair(minted.keyPem, minted.certPem, DEPLOYMENT);
    expect(first.ok).toBe(true);
    expect(entries()).toHaveLength(1);
    const again = await inspectPair(minted.keyPem, minted.certPem, DEPLOYMENT);
    expect(again).toEqual(first);
  });

  it('vouches for nothing else: another key, an edited certificate or another deployment is refused in full, and no refusal is remembered', async () => {
    const a = await mintCa({ deployment: DEPLOYMENT, now: new Date() });
    const b = await mintCa({ deployment: DEPLOYMENT, now: new Date() });
    expect((await inspectPair(a.keyPem, a.certPem, DEPLOYMENT)).ok).toBe(true);
    const remembered = entries().length;

    const swapped = await inspectPair(b.keyPem, a.certPem, DEPLOYMENT);
    expect(swapped).toMatchObject({ ok: false, fault: { kind: 'mismatched' } });
    const other = await inspectPair(a.keyPem, a.certPem, 'fedcba9876543210fedcba9876543210');
    expect(other).toMatchObject({ ok: false, fault: { kind: 'foreign', organization: DEPLOYMENT } });
    // One byte of the signature changed: the fields still read, OpenSSL's verification does not pass.
    const pem = Buffer.from(a.certPem).toString('utf8');
    const body = pem
      .split('\n')
      .filter((l) => !l.startsWith('-----'))
      .join('');
    const der = Buffer.from(body, 'base64');
    der.writeUInt8(der.readUInt8(der.length - 5) ^ 0x01, der.length - 5);
    const edited = Buffer.from(
      `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`,
    );
    const forged = await inspectPair(a.keyPem, edited, DEPLOYMENT);
    expect(forged.ok).toBe(false);
    expect(entries()).toHaveLength(remembered);
  });
});
