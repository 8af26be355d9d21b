/**
 * What the mesh delivered for one provider: every regular file directly inside
 * `<mesh_dir>/provides/<provider>/`, its name the role (or, for an alternating pair, the login
 * file `<role>+a` / `<role>+b`) and its content the secret.
 *
 * The scan runs on every poll of a service that lives as long as the machine, so it is
 * stat-first: a file is read and hashed only when its inode, size, mtime or ctime changed
 * since the last scan (an atomic replacement always brings a new inode). Only digests are
 * kept between scans — a secret does not belong in a long-lived variable when a hash answers
 * the same question (mesh seed). Between full scans it is change-first (dir-changes.ts): while
 * neither the directory's stat nor its inotify watch saw a change, a poll stats nothing but the
 * directory and reuses the last result; after a rename only the names that changed are stat'd.
 */
import { readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { secretDigest, type SecretDigest } from '../mesh/digest.js';
import { secretProblem } from '../mesh/secret.js';
import { alternatingRoleProblem, parseLoginFileName } from '../mesh/alternating.js';
import { roleNameProblem } from '../mesh/role-name.js';
import { STAGED_SUFFIX } from '../mesh/transport.js';
import { shown } from '../outside-text.js';
import { DirChanges, type ScanPlan } from './dir-changes.js';

/** One delivered file: a digest to apply, or the problem that keeps it from being applied. */
export type DeliveredCredential =
  | {
      readonly role: string;
      readonly file: string;
      readonly digest: SecretDigest;
      readonly problem?: undefined;
    }
  | { readonly role: string; readonly file: string; readonly digest?: undefined; readonly problem: string };

export type DeliveredScan =
  | { readonly ok: true; readonly credentials: readonly DeliveredCredential[] }
  /** The directory itself could not be listed (missing, not a directory, unreadable). */
  | { readonly ok: false; readonly problem: string };

/**
 * Why a delivered file's name is neither a role nor a login file of one, or undefined: the
 * inventory's own rules (the login names are the shared ones of src/mesh/alternating.ts).
 */
export function deliveredRoleProblem(name: string): string | undefined {
  if (parseLoginFileName(name)) return undefined;
  const group = /^(.+)\+[ab]$/.exec(name)?.[1];
  const groupProblem =
    group === undefined ? undefined : (roleNameProblem(group) ?? alternatingRoleProblem(group));
  if (groupProblem) return `a login file whose role "${group}" is ${groupProblem}`;
  return roleNameProblem(name);
}

/**
 * Not a live credential: dotfiles (`.applied/`, temp files), `<role>.next` (staged by the
 * prepare phase, live only once the commit renames it) and the transports' temp files for it
 * (`<role>.next.tmp.<random>`) — reporting those as bad roles would fail every rotation.
 */
export function isDeliveredName(name: string): boolean {
  return !name.startsWith('.') && !name.endsWith(STAGED_SUFFIX) && !name.includes(`${STAGED_SUFFIX}.`);
}

/** The rule for a secret's bytes is the mesh's (mesh seed writes what the provisioner reads). */
export { secretProblem };

/**
 * Above any kernel's timestamp granularity (a jiffy is at most 10 ms), yet small enough that a
 * poll right after a rotation does not hash every file again.
 */
const RACY_MS = 25;

/** The suffix rolledBackPath (src/mesh/transport.ts) gives a role's rolled-back file, after a leading dot. */
const ROLLED_BACK_SUFFIX = '.rolled-back';

export class DeliveredCredentials {
  private readonly cache = new Map<
    string,
    {
      readonly stat: {
        readonly ino: number;
        readonly size: number;
        readonly mtimeMs: number;
        readonly ctimeMs: number;
      };
      readonly result: DeliveredCredential;
    }
  >();
  /** Every name the last scan listed, dotfiles included (a rolled-back file is one). */
  private names: ReadonlySet<string> = new Set();
  private readonly changes: DirChanges;
  /** The last scan's result, and whether every credential in it came from the cache (none to look at again). */
  private last:
    { readonly credentials: readonly DeliveredCredential[]; readonly settledAll: boolean } | undefined;

  constructor(readonly dir: string) {
    this.changes = new DirChanges(dir, isDeliveredName);
  }

  /**
   * The roles whose rolled-back file (`.<role>.rolled-back`, rolledBackPath) the last listing
   * held: looked up by role, so an idle poll builds no name per role to ask about it.
   */
  private rolledBack: ReadonlySet<string> = new Set();

  /** Whether the last scan listed `name` (any entry of the directory). */
  listed(name: string): boolean {
    return this.names.has(name);
  }

  /** Whether the last scan listed a rolled-back file for `role`. */
  hasRolledBack(role: string): boolean {
    return this.rolledBack.size > 0 && this.rolledBack.has(role);
  }

  /** Before a scan: lets the watch hear of every write made before this call (DirChanges.settled). */
  settled(): Promise<void> {
    return this.changes.settled();
  }

  /** Stops watching the directory (a provisioner that stops); a later scan starts again in full. */
  close(): void {
    this.changes.lost();
  }

  scan(now: number = Date.now()): DeliveredScan {
    let st: Stats | undefined;
    try {
      st = statSync(this.dir);
    } catch {
      st = undefined; // readdir below says why, in the words a listing failure always had
    }
    // Planned before the listing, so the watch (started by the first plan) misses nothing after it.
    const planned = st ? this.changes.plan(st, now) : undefined;
    const plan: ScanPlan = planned && this.last ? planned : { kind: 'full' };
    if (plan.kind === 'none' && this.last?.settledAll) {
      this.changes.scanned(plan, st!, now);
      return { ok: true, credentials: this.last.credentials };
    }
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      this.changes.lost();
      this.last = undefined;
      return { ok: false, problem: describeFsError(error) };
    }
    this.names = new Set(names);
    this.rolledBack = new Set(
      names
        .filter((n) => n.startsWith('.') && n.endsWith(ROLLED_BACK_SUFFIX))
        .map((n) => n.slice(1, -ROLLED_BACK_SUFFIX.length)),
    );
    const credentials: DeliveredCredential[] = [];
    const seen = new Set<string>();
    let settledAll = true;
    // `none` with a credential left to look at again (racy, or unreadable last time): only those.
    const changed =
      plan.kind === 'names' ? plan.changed : plan.kind === 'none' ? new Set<string>() : undefined;
    for (const name of names.sort()) {
      if (!isDeliveredName(name)) continue;
      seen.add(name);
      // Between full scans a name neither witness saw change keeps its cached result, unstat'd.
      const cached = changed && !changed.has(name) ? this.cache.get(name) : undefined;
      if (cached) {
        credentials.push(cached.result);
        continue;
      }
      const credential = this.examine(name);
      if (!this.cache.has(name)) settledAll = false;
      credentials.push(credential);
    }
    for (const name of this.cache.keys()) if (!seen.has(name)) this.cache.delete(name);
    if (st)
      this.changes.scanned(plan.kind === 'none' ? { kind: 'names', changed: new Set() } : plan, st, now);
    this.last = { credentials, settledAll };
    return { ok: true, credentials };
  }

  private examine(role: string): DeliveredCredential {
    const file = path.join(this.dir, role);
    const cached = this.cache.get(role);
    // A name once found good stays good: only a new name is checked against the rules.
    const nameProblem = cached ? undefined : deliveredRoleProblem(role);
    if (nameProblem) return { role, file, problem: `the file name is ${nameProblem}` };
    let st;
    try {
      st = statSync(file, { throwIfNoEntry: false });
    } catch (error) {
      return { role, file, problem: `cannot be read (${describeFsError(error)})` };
    }
    if (!st) return { role, file, problem: 'cannot be read (it is a symbolic link to nothing, or vanished)' };
    if (!st.isFile())
      return {
        role,
        file,
        problem: `is not a regular file (${st.isDirectory() ? 'a directory' : 'a special file'})`,
      };
    // Compared field by field: building a string of four numbers per file per poll was most
    // of an idle poll's own cost at thousands of roles.
    if (
      cached?.stat.ino === st.ino &&
      cached.stat.size === st.size &&
      cached.stat.mtimeMs === st.mtimeMs &&
      cached.stat.ctimeMs === st.ctimeMs
    )
      return cached.result;
    const result = readDelivered(role, file);
    // "Racy clean" (as git calls it): file times come from a coarse clock, so a same-size
    // rewrite in the same tick as the change just read would keep every stat field. A file
    // changed that recently is read again next time instead of being trusted from the cache.
    if (Date.now() - st.ctimeMs > RACY_MS)
      this.cache.set(role, {
        stat: { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs },
        result,
      });
    else this.cache.delete(role);
    return result;
  }
}

/** Reads one delivered file: its digest, or why it cannot be applied. The secret is not returned. */
export function readDelivered(role: string, file: string): DeliveredCredential {
  const read = readSecretFile(file);
  if (read.problem !== undefined) return { role, file, problem: read.problem };
  try {
    return { role, file, digest: secretDigest(read.secret) };
  } finally {
    read.secret.fill(0);
  }
}

/** The secret in `file` if it is one the provisioner accepts. The caller zeroes it when done. */
export function readSecretFile(
  file: string,
): { readonly secret: Buffer; readonly problem?: undefined } | { readonly problem: string } {
  let secret: Buffer;
  try {
    secret = readFileSync(file);
  } catch (error) {
    return { problem: `cannot be read (${describeFsError(error)})` };
  }
  const problem = secretProblem(secret);
  if (problem === undefined) return { secret };
  secret.fill(0);
  return { problem };
}

export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'it does not exist';
    case 'ENOTDIR':
      return 'a path component is not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      // Node's message names the path, a file name from outside: shown, never printed raw.
      return shown(error instanceof Error ? error.message : String(error));
  }
}
