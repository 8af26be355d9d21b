/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802 / RFC 7677), computed
 * HERE so `CREATE/ALTER ROLE … PASSWORD` carries only the verifier: a cleartext password in
 * the statement would land in the server's statement log, its activity view and any
 * replication of it.
 */
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

/** PostgreSQL's default iteration count (`scram_iterations`). */
export const SCRAM_ITERATIONS = 4096;

/**
 * `SCRAM-SHA-256$<iterations>:<salt b64>$<StoredKey b64>:<ServerKey b64>` — the exact shape
 * PostgreSQL recognises as already hashed and stores as is. The salt is random per call, so
 * the same secret never yields the same verifier twice.
 */
export async function scramVerifier(
  secret: Uint8Array,
  salt: Uint8Array = randomBytes(16),
  iterations: number = SCRAM_ITERATIONS,
): Promise<string> {
  const salted = await pbkdf2Async(secret, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
