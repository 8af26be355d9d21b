/**
 * Alternating credentials (docs/mesh-rotation.md, "Alternating credentials"). A pair's role R
 * becomes a NOLOGIN group that owns the grants, and two login roles, R_a and R_b, members of R
 * with `SET ROLE R` at login, take turns. A rotation gives a new password to the login the
 * consumer is NOT using and moves the consumer to it only once the database has it: the
 * consumer always holds a login that works, so there is no window, and no crash between the
 * provider's commit and the consumer's can strand it.
 *
 * The names and formats here are shared by the mesh (what it delivers), the provisioner (what
 * it reads) and the tests: one definition, so they cannot drift apart.
 */
import { ROLE_NAME_MAX_BYTES, roleNameProblem } from './role-name.js';

/** How a pair's credential is held in the database: one login role, or two that alternate. */
export type CredentialMode = 'single' | 'alternating';

/** One of the two logins of an alternating pair. */
export type LoginSlot = 'a' | 'b';
export const LOGIN_SLOTS: readonly LoginSlot[] = ['a', 'b'];

export function otherSlot(slot: LoginSlot): LoginSlot {
  return slot === 'a' ? 'b' : 'a';
}

/** The login role of a slot: `web1_app` → `web1_app_a`. */
export function loginRole(role: string, slot: LoginSlot): string {
  return `${role}_${slot}`;
}

/** Why `role` cannot be an alternating group (its logins would not be role names), or undefined. */
export function alternatingRoleProblem(role: string): string | undefined {
  for (const slot of LOGIN_SLOTS) {
    const login = loginRole(role, slot);
    if (Buffer.byteLength(login, 'utf8') > ROLE_NAME_MAX_BYTES) {
      return `too long for alternating logins ("${login}" would be longer than ${ROLE_NAME_MAX_BYTES} bytes)`;
    }
    const problem = roleNameProblem(login);
    if (problem) return `unusable for alternating logins ("${login}" is ${problem})`;
  }
  return undefined;
}

/**
 * The provider-end file of a login: `<role>+<slot>` under `provides/<provider>/`. `+` is outside
 * the role-name alphabet, so such a file can never be mistaken for a single role's file, and a
 * pair being switched can hold both (`web1_app` and `web1_app+a`) side by side.
 */
export function loginFileName(role: string, slot: LoginSlot): string {
  return `${role}+${slot}`;
}

export interface LoginFile {
  /** The group role (the pair's role). */
  readonly group: string;
  readonly slot: LoginSlot;
  /** The login role the file's secret is the password of. */
  readonly login: string;
}

/** `web1_app+a` → { group: web1_app, slot: a, login: web1_app_a }; undefined for any other name. */
export function parseLoginFileName(name: string): LoginFile | undefined {
  const match = /^(.+)\+([ab])$/.exec(name);
  if (!match) return undefined;
  const group = match[1]!;
  const slot = match[2] as LoginSlot;
  if (roleNameProblem(group) || alternatingRoleProblem(group)) return undefined;
  return { group, slot, login: loginRole(group, slot) };
}

/**
 * The consumer end of an alternating pair: one line of libpq keyword/value connection
 * parameters, `user=<login> password='<secret>'`, with no trailing newline (the transports carry
 * one file per line). A libpq-based client appends host and dbname and connects with it as is;
 * `user=` comes first so the login can be read without reading the password.
 */
export function formatConsumerConninfo(login: string, password: string): string {
  // A login is a role name (a–z, 0–9, _): bare is exact, and lets a shell's sed read it.
  return `user=${login} password=${quoteConninfoValue(password)}`;
}

/**
 * libpq's quoting for a keyword/value value: in single quotes, with `\` and `'` escaped by a
 * backslash. Always quoted, so a reader never has to guess whether a value was.
 */
export function quoteConninfoValue(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/**
 * Parses keyword/value connection parameters by libpq's rules (`keyword = value`, spaces
 * around `=` allowed, a value bare up to whitespace or single-quoted with `\` escapes).
 * Returns undefined for text that is not such a string — a single role's file (the bare
 * secret) is not.
 */
export function parseConninfo(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let i = 0;
  const n = text.length;
  const space = (c: string | undefined) => c !== undefined && /\s/.test(c);
  while (i < n) {
    while (space(text[i])) i++;
    if (i >= n) break;
    const keyStart = i;
    while (i < n && text[i] !== '=' && !space(text[i])) i++;
    const key = text.slice(keyStart, i);
    while (space(text[i])) i++;
    if (key === '' || text[i] !== '=') return undefined;
    i++;
    while (space(text[i])) i++;
    let value = '';
    if (text[i] === "'") {
      i++;
      let closed = false;
      while (i < n) {
        const c = text[i]!;
        if (c === '\\') {
          if (i + 1 >= n) return undefined;
          value += text[i + 1];
          i += 2;
        } else if (c === "'") {
          i++;
          closed = true;
          break;
        } else {
          value += c;
          i++;
        }
      }
      if (!closed) return undefined;
    } else {
      while (i < n && !space(text[i])) {
        if (text[i] === '\\' && i + 1 < n) {
          value += text[i + 1];
          i += 2;
        } else value += text[i++];
      }
    }
    out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The login a consumer end names, or undefined when it is not an alternating consumer end. */
export function conninfoLogin(text: string): string | undefined {
  const fields = parseConninfo(text);
  return fields && fields.user !== undefined && fields.password !== undefined ? fields.user : undefined;
}

/** Which slot of `role` a login is, or undefined when it is neither of its logins. */
export function slotOfLogin(role: string, login: string): LoginSlot | undefined {
  return LOGIN_SLOTS.find((slot) => loginRole(role, slot) === login);
}
