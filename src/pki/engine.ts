import { webcrypto } from 'node:crypto';
import * as pkijs from 'pkijs';

let engine: pkijs.CryptoEngine | undefined;

/**
 * pkijs on Node's own WebCrypto, set once as pkijs' global engine AND passed explicitly to every
 * call: a library that silently picked another engine (or none) would fail at sign time, far
 * from the cause.
 */
export function pkiEngine(): pkijs.CryptoEngine {
  if (!engine) {
    engine = new pkijs.CryptoEngine({ name: 'node-webcrypto', crypto: webcrypto as unknown as Crypto });
    pkijs.setEngine('node-webcrypto', engine);
  }
  return engine;
}
