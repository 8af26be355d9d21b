/**
 * Quoting for the two values the provisioner puts into a statement that cannot take bind
 * parameters (`CREATE/ALTER ROLE … PASSWORD` is a utility statement): a role name, already
 * validated, and a verifier built only from base64 and fixed characters. Quoted anyway, so a
 * validation slip can never become SQL.
 */

/** `"name"` with embedded quotes doubled: SQL's identifier quoting. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * `'text'` with embedded quotes doubled. Refuses a backslash and NUL rather than depending on
 * `standard_conforming_strings`: a verifier never has one.
 */
export function quoteLiteral(text: string): string {
  if (/[\\\0]/.test(text)) throw new Error('a SQL literal here never contains a backslash or NUL');
  return `'${text.replace(/'/g, "''")}'`;
}
