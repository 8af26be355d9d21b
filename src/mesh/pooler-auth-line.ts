/**
 * One login's line in a pgbouncer auth_file (docs/inventory.md, "Poolers"): `"login" "secret"`,
 * each field in double quotes, a `"` inside written `""`. Only the rotated login's line changes;
 * every other line (other logins, comments) is kept byte for byte. Used by the provisioner
 * beside the database (src/provisioner/pooler-auth-file.ts) and by the controller for a pooler
 * on another machine (pooler-remote.ts): one format, one piece of code.
 */

/** One field as pgbouncer's auth_file reads it: in double quotes, a `"` doubled. */
export function quoteAuthField(value: string): string {
  return `"${value.replace(/"/g, '""')}"`;
}

/**
 * The login a line is for (its first quoted field, `""` read as `"`), or undefined for a line
 * that names none (empty, a `;` or `#` comment, or not pgbouncer's shape).
 */
export function authLineUser(line: string): string | undefined {
  const m = /^\s*"((?:[^"]|"")*)"/.exec(line);
  return m ? m[1]!.replace(/""/g, '"') : undefined;
}

/** `text` with `user`'s line(s) replaced by one `"user" "verifier"` line (appended when it had none). */
export function withAuthLine(text: string, user: string, verifier: string): string {
  const line = `${quoteAuthField(user)} ${quoteAuthField(verifier)}`;
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  let placed = false;
  const out: string[] = [];
  for (const l of lines) {
    if (authLineUser(l) !== user) out.push(l);
    else if (!placed) {
      out.push(line);
      placed = true;
    }
  }
  if (!placed) out.push(line);
  return `${out.join('\n')}\n`;
}

/** The secret a line holds (its second quoted field, `""` read as `"`), or undefined for a line of another shape. */
export function authLineSecret(line: string): string | undefined {
  const m = /^\s*"(?:[^"]|"")*"\s+"((?:[^"]|"")*)"/.exec(line);
  return m ? m[1]!.replace(/""/g, '"') : undefined;
}
