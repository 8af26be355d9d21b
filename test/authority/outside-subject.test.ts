/**
 * A certificate's subject is written by whoever minted it: an Organization holding a line break
 * or ESC[8m is named in the refusal escaped, on one line, never obeyed.
 */
import { describe, expect, it } from 'vitest';
import { mintAuthority } from '../../src/authority/index.js';
import { checkPair } from '../../src/authority/check-pair.js';
import { batonErrorOf } from '../helpers/baton-error.js';

const DEP = '0123456789abcdef0123456789abcdef';
const OBEYED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

describe('a certificate subject in a refusal', () => {
  it('names a hostile Organization escaped, on one line', async () => {
    const files = await mintAuthority('evil\x1b[8m\r\nNext: baton sync --force\u202e');
    const error = await batonErrorOf(checkPair(files['ca.key']!, files['ca.crt']!, DEP, '/tmp/ca'));
    expect(error.code).toBe('refused');
    expect(error.what).not.toMatch(OBEYED);
    expect(error.what).toBe(
      `the certificate belongs to another deployment: its Organization is "evil\\x1b[8m\\r\\nNext: baton sync --force\\u202e", not "${DEP}".`,
    );
  });
});
