/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802 / RFC 7677), computed
 * HERE so `CREATE/ALTER ROLE … PASSWORD` carries only the verifier: a cleartext password in
 * the statement would land in the server's statement log, its activity view and any
 * replication of it.
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
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
  const { storedKey, serverKey } = await scramKeys(secret, salt, iterations);
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}

async function scramKeys(
  secret: Uint8Array,
  salt: Uint8Array,
  iterations: number,
): Promise<{ storedKey: Buffer; serverKey: Buffer }> {
  const salted = await pbkdf2Async(secret, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return {
    storedKey: createHash('sha256').update(clientKey).digest(),
    serverKey: createHmac('sha256', salted).update('Server Key').digest(),
  };
}

const VERIFIER =
  /^SCRAM-SHA-256\$(\d{1,7}):([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2}):([A-Za-z0-9+/]+={0,2})$/;

/**
 * True when `verifier` (as `pg_authid.rolpassword` holds it) was made from `secret`: the keys
 * are derived again with ITS salt and iteration count and compared. This answers "is the
 * database still holding the delivered password?" without remembering what was set, so it
 * survives a restart of the provisioner. An MD5 hash, a cleartext or no password is false.
 */
export async function scramMatches(verifier: string | null, secret: Uint8Array): Promise<boolean> {
  const match = verifier === null ? null : VERIFIER.exec(verifier);
  if (!match) return false;
  const iterations = Number(match[1]);
  if (iterations < 1) return false;
  const { storedKey, serverKey } = await scramKeys(secret, Buffer.from(match[2]!, 'base64'), iterations);
  const stored = Buffer.from(match[3]!, 'base64');
  const server = Buffer.from(match[4]!, 'base64');
  return (
    stored.length === 32 &&
    server.length === 32 &&
    timingSafeEqual(stored, storedKey) &&
    timingSafeEqual(server, serverKey)
  );
}
