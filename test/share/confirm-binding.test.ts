/**
 * The values irreversible steps are bound to, and the check of `--confirm`: exact, naming what
 * was expected and where to read it, never printing the value itself.
 */
import { describe, expect, it } from 'vitest';
import {
  checkConfirmations,
  etagShown,
  forceBinding,
  pushOverBinding,
  replaceBinding,
  UNSEAL_BINDING,
} from '../../src/share/confirm-binding.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { batonErrorOf } from '../helpers/baton-error.js';

const LOCAL = 'SHA256:Ab3dEf9hIjkLmnOpqrStuvWxyz0123456789abcdEFG' as Fingerprint;
const PUBLISHED = 'SHA256:zY9xWv8uTsrQpoNmlKjiHgfEdcBA9876543210zyxWVU' as Fingerprint;
const refused = (bindings: Parameters<typeof checkConfirmations>[0], given: string[]) =>
  batonErrorOf(Promise.resolve().then(() => checkConfirmations(bindings, given, 's3://b/p/authority.json')));

describe('bound confirmations', () => {
  it('accepts exactly the expected values, one per step', () => {
    expect(() => checkConfirmations([forceBinding(LOCAL)], ['Ab3dEf9h'], 'w')).not.toThrow();
    expect(() =>
      checkConfirmations([pushOverBinding(PUBLISHED), UNSEAL_BINDING], ['unseal', 'zY9xWv8u'], 'w'),
    ).not.toThrow();
    expect(() => checkConfirmations([], [], 'w')).not.toThrow();
  });

  it("refuses a missing, wrongly-cased or other side's value with exit 2, naming what and where to read it, never the value", async () => {
    for (const given of [[], ['ab3def9h'], ['zY9xWv8u'], ['Ab3dEf9h', 'extra']]) {
      const error = await refused([forceBinding(LOCAL)], given);
      expect(error).toMatchObject({
        code: 'usage',
        exitCode: 2,
        changed: 'Nothing was written.',
        where: 's3://b/p/authority.json',
      });
      expect(error.what).toContain(
        '--force needs --confirm with the 8 characters after "SHA256:" of the LOCAL fingerprint',
      );
      expect(error.next).toContain('of the LOCAL fingerprint status shows (`baton status`)');
      expect(`${error.what} ${error.next}`).not.toContain('Ab3dEf9h');
      // Only the right characters in the wrong case are told apart from a plain mismatch.
      expect(error.what.includes('not the same case')).toBe(given[0] === 'ab3def9h');
    }
  });

  it('refuses --confirm where no step is bound', async () => {
    const error = await refused([], ['Ab3dEf9h']);
    expect(error.what).toContain('--confirm applies only with --force');
  });

  it('the ETag is shown and typed without quotes or a weak marker', () => {
    expect(etagShown('W/"9f86d081884c7d65"')).toBe('9f86d081884c7d65');
    expect(replaceBinding('"9f86d081884c7d65"').expected).toBe('9f86d081');
    expect(replaceBinding('"9f86d081884c7d65"').placeholder.placeholder).toBe('ETAG 8');
  });
});
