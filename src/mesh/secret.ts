/**
 * A credential in memory. It renders as `[secret]` everywhere a value can leak by accident
 * (template strings, JSON, util.inspect, error messages), so a log line or a journal record
 * that picks one up by mistake carries nothing; only `reveal()` — called by a transport as it
 * writes to a child's stdin or a file — gives the bytes.
 */
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { secretDigest, type SecretDigest } from './digest.js';

export class Secret {
  readonly #value: string;
  readonly digest: SecretDigest;

  private constructor(value: string) {
    this.#value = value;
    this.digest = secretDigest(value);
  }

  /**
   * 256 random bits as 43 base64url characters: usable as a database password as-is (no NUL,
   * no quote, no newline — the ssh transport relies on "one secret per line" on stdin).
   */
  static generate(): Secret {
    return new Secret(randomBytes(32).toString('base64url'));
  }

  /** For tests and for reading a delivered file back; the text must be a single line. */
  static fromText(value: string): Secret {
    if (/[\r\n\0]/.test(value)) throw new Error('a secret is a single line');
    return new Secret(value);
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[secret]';
  }

  toJSON(): string {
    return '[secret]';
  }

  [inspect.custom](): string {
    return '[secret]';
  }
}

/**
 * A secret the mesh delivers and the provisioner accepts: printable ASCII. Every client library then hashes the
 * same bytes (SASLprep leaves ASCII alone), and a stray newline from a hand-written file —
 * which a consumer might trim and the provider would not — is caught here, by name.
 */
export function secretProblem(secret: Uint8Array): string | undefined {
  if (secret.length === 0) return 'is empty';
  for (const byte of secret) {
    if (byte < 0x20 || byte > 0x7e) {
      return byte === 0x0a || byte === 0x0d
        ? 'contains a line break (the mesh writes the secret exactly, with no trailing newline)'
        : 'contains bytes outside printable ASCII';
    }
  }
  return undefined;
}
