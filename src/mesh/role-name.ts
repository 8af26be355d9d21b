/**
 * A pair's role name is derived, not chosen per rotation: the same consumer must map to the
 * same database role every time, or a rotation would create a second role and leave the old
 * password working beside it.
 */

/** A PostgreSQL identifier the provisioner can use unquoted: it also names a file. */
export const ROLE_NAME = /^[a-z_][a-z0-9_]*$/;
export const ROLE_NAME_MAX_BYTES = 63;

/** `web1-app` → `web1_app`: lowercase, every character outside [a-z0-9_] becomes `_`. */
export function deriveRoleName(consumer: string): string {
  return consumer.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/**
 * Names PostgreSQL reserves for itself: it refuses to create or alter them, so a pair with one
 * would be retried for ever and never applied.
 */
export const RESERVED_ROLE_NAMES: ReadonlySet<string> = new Set([
  'public',
  'none',
  'current_user',
  'session_user',
  'current_role',
]);

/** Why `role` is not a usable role name, or undefined when it is. */
export function roleNameProblem(role: string): string | undefined {
  if (Buffer.byteLength(role, 'utf8') > ROLE_NAME_MAX_BYTES)
    return `longer than ${ROLE_NAME_MAX_BYTES} bytes`;
  if (!ROLE_NAME.test(role)) return 'not a PostgreSQL identifier (a–z or _ first, then a–z, 0–9 or _)';
  if (RESERVED_ROLE_NAMES.has(role))
    return 'reserved by PostgreSQL (public, none, current_user, session_user and current_role cannot be roles)';
  if (role.startsWith('pg_')) return 'reserved by PostgreSQL (the pg_ prefix is kept for its own roles)';
  return undefined;
}
