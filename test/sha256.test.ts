import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256, sha256Base64, sha256Hex } from '../src/sha256.js';

const reference = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

describe('sha256 (plain JavaScript) agrees with node:crypto', () => {
  it('on the FIPS 180-4 examples', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('on every length from 0 to 300 bytes (each padding case: 55, 56, 63, 64, 119, 120 …) and on 2,000 random inputs up to 20 KB', () => {
    let checked = 0;
    for (let length = 0; length <= 300; length++) {
      const data = randomBytes(length);
      expect(Buffer.from(sha256(data)).equals(reference(data)), `length ${length}`).toBe(true);
      checked += 1;
    }
    for (let i = 0; i < 2_000; i++) {
      const data = randomBytes(Math.floor(Math.random() * (i % 10 === 0 ? 20_000 : 600)));
      expect(Buffer.from(sha256(data)).equals(reference(data)), `input ${data.toString('hex')}`).toBe(true);
      checked += 1;
    }
    expect(checked).toBe(2_301);
  });

  it('hashes a string as its UTF-8 bytes, and gives hex and base64 as createHash does', () => {
    for (const text of ['', 'file:///tmp/store', 'é→😀\u0000\u001b[8m', 'x'.repeat(1000)]) {
      expect(sha256Hex(text)).toBe(reference(text).toString('hex'));
      expect(sha256Base64(text)).toBe(reference(text).toString('base64'));
    }
  });

  it('leaves its input as it was, and a subarray is hashed as its own bytes only', () => {
    const whole = randomBytes(200);
    const copy = Buffer.from(whole);
    const part = whole.subarray(17, 150);
    expect(Buffer.from(sha256(part)).equals(reference(part))).toBe(true);
    expect(whole.equals(copy)).toBe(true);
  });
});
