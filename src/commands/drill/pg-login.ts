/**
 * A real login to the sandbox PostgreSQL, the way a consumer logs in: the drill's proof that a
 * rotation took effect is the database accepting the new password and refusing the old one,
 * not a file on disk saying so.
 */
import { isBatonError } from '../../errors.js';
import { shown } from '../../outside-text.js';
import type { Secret } from '../../mesh/secret.js';

export type LoginResult =
  | { readonly ok: true }
  /** `refused`: PostgreSQL answered "password authentication failed" (28P01). */
  | { readonly ok: false; readonly refused: boolean; readonly reason: string };

export interface PgAddress {
  readonly host: string;
  readonly port: number;
}

export async function tryLogin(address: PgAddress, role: string, password: Secret): Promise<LoginResult> {
  const { default: pg } = await import('pg');
  // Every field explicit: the client must not fall back to PGPASSWORD or ~/.pgpass.
  const client = new pg.Client({
    host: address.host,
    port: address.port,
    user: role,
    password: password.reveal(),
    database: 'postgres',
    connectionTimeoutMillis: 5000,
  });
  // A failed login ends the socket; an 'error' event without a listener would crash the drill.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { ok: true };
  } catch (error) {
    const code = (error as { code?: string }).code;
    // The server writes the message and the code: shown, never printed raw.
    const reason = isBatonError(error)
      ? error.what
      : shown(error instanceof Error ? error.message : String(error));
    return { ok: false, refused: code === '28P01', reason: code ? `${shown(code)}: ${reason}` : reason };
  } finally {
    await client.end().catch(() => {});
  }
}
