/**
 * A pair switched back from alternating to single leaves its two logins behind in the database:
 * `R_a` and `R_b`, members of the group `R`, LOGIN. One whose file went away is set NOLOGIN by
 * the provisioner's `leaving` queue — but the login that never had a file of its own (created at
 * the switch with the single role's verifier, "copied") has no file to go away, and kept
 * accepting the pre-switch password: a back door, while status said ✓ applied.
 *
 * So the rule is stated on what is delivered, not on what went away: a group delivered as a
 * plain file with neither login file beside it has no login, whatever each had. It is asked for
 * every single group on the first cycle of a provisioner's run (the switch's `retire` removed
 * the login files and their receipts, so after a crash or restart only the database remembers),
 * then whenever one of a group's login files leaves: one query each time, none on an idle cycle.
 */
import { LOGIN_SLOTS, loginFileName, loginRole, parseLoginFileName } from '../mesh/alternating.js';
import type { RoleDatabase } from './postgres-roles.js';

/** The groups delivered plain with no login file beside them: their logins must not log in. */
export function singleGroups(present: ReadonlySet<string>): string[] {
  return [...present].filter(
    (name) =>
      parseLoginFileName(name) === undefined &&
      LOGIN_SLOTS.every((slot) => !present.has(loginFileName(name, slot))),
  );
}

/**
 * Sets NOLOGIN each login of `groups` that exists, is a member of its group and still logs in —
 * never a role delivered under its own name (a single pair whose role happens to be `R_a`).
 * Returns the groups found settled (every such login NOLOGIN), for the caller to stop checking.
 */
export async function closeSwitchedBackLogins(
  db: Pick<RoleDatabase, 'inspect'>,
  groups: readonly string[],
  present: ReadonlySet<string>,
  disable: (login: string, line: string) => Promise<boolean>,
): Promise<string[]> {
  if (groups.length === 0) return [];
  const logins = groups.flatMap((group) =>
    LOGIN_SLOTS.map((slot) => ({ group, login: loginRole(group, slot) })).filter(
      ({ login }) => !present.has(login),
    ),
  );
  const stored = await db.inspect(logins.map((l) => l.login));
  const unsettled = new Set<string>();
  for (const { group, login } of logins) {
    const role = stored.get(login);
    if (!role?.canLogin || !(role.memberOf ?? []).includes(group)) continue;
    const done = await disable(
      login,
      `${login} set NOLOGIN: ${group} is delivered as a single role again, and no file names ${login}`,
    );
    if (!done) unsettled.add(group);
  }
  return groups.filter((group) => !unsettled.has(group));
}
