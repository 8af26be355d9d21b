/**
 * One provider's provisioner: makes PostgreSQL accept what the mesh delivered to
 * `<mesh_dir>/provides/<provider>/`, and writes a receipt per role once it has.
 *
 * `runCycle` is one reconciliation, callable in-process (the CLI, `--watch`, the drill and the
 * benchmark all use it). Each cycle also checks, in the database itself, every role it had
 * applied — it exists, can log in, and still holds a verifier of the delivered password. A
 * change found there is written in the receipt (so `mesh status` shows it for one interval) and
 * the delivered password is put back on the NEXT cycle: a receipt says what the database holds,
 * not what it once accepted, and an operator who changed a role by hand gets to see it. Between cycles it keeps DIGESTS, never secrets: the secret is read from its
 * file only while a verifier is computed or checked, and dropped right after.
 */
import { loginOfFile, SessionCensus } from './session-census.js';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { shown } from '../outside-text.js';
import { BatonError } from '../errors.js';
import {
  changedInDatabase,
  DATABASE_FINDING_WORDS,
  digestPrefix,
  END_SESSIONS_DIR,
  secretDigest,
  type DatabaseFinding,
  type Receipt,
  type SecretDigest,
} from '../mesh/digest.js';
import { loginRole, otherSlot, parseLoginFileName, type LoginFile } from '../mesh/alternating.js';
import { rolledBackPath } from '../mesh/transport.js';
import { appliedVerifierPath } from '../mesh/applied-verifier.js';
import {
  DeliveredCredentials,
  describeFsError,
  isDeliveredName,
  readSecretFile,
} from './delivered-credentials.js';
import {
  ConnectionLost,
  messageOf,
  RoleSkipped,
  type ConnectRoleDatabase,
  type ProviderLock,
  type RoleDatabase,
  type RoleOutcome,
  type StoredRole,
} from './postgres-roles.js';
import { mapBounded } from '../mesh/map-bounded.js';
import { ReceiptIndex } from './receipt-index.js';
import { isTempReceipt, receiptsDir, STALE_TEMP_MS, writeReceipt } from './receipts.js';
import { closeSwitchedBackLogins, singleGroups } from './switched-back-logins.js';
import { scramMatches, scramVerifier } from './scram-verifier.js';
import { keptVerifier, prepareAppliedVerifier, type PendingVerifier } from './applied-verifiers.js';

export interface ProvisionerOptions {
  readonly meshDir: string;
  readonly provider: string;
  readonly connect: ConnectRoleDatabase;
  /** One plain line per change (created / updated / failed); never a secret. */
  readonly log: (line: string) => void;
  readonly clock?: () => Date;
  /**
   * One provisioner per provider: a cycle with work asks for it before connecting (after the
   * scan, so an unreadable directory is reported as such) and does nothing while another
   * holds it. The caller releases it when the provisioner stops.
   */
  readonly lock?: Pick<ProviderLock, 'acquire'>;
  /**
   * A pgbouncer beside the database that keeps its logins in an auth_file (`--pooler-auth-file`):
   * each login's line gets the verifier just set, and RELOAD, before its receipt is written.
   */
  readonly pooler?: { readonly file: string; set(user: string, verifier: string): Promise<void> };
}

export interface AppliedRole {
  readonly role: string;
  readonly digest: SecretDigest;
  readonly outcome: RoleOutcome;
  /** Set when this put back a role found changed in the database: what was found. */
  readonly restored?: ChangedFinding;
  /** A login file's first application created the pair's other login with the group's stored verifier. */
  readonly copied?: boolean;
}

export type ChangedFinding = Exclude<DatabaseFinding, 'as-set'>;

export interface FailedRole {
  readonly role: string;
  readonly file: string;
  readonly reason: string;
  /**
   * A problem with the delivered file (name, content, type) is looked at again only when the
   * file changes; anything else (database, receipt) is retried, with backoff under --watch.
   */
  readonly inFile: boolean;
  /**
   * `database`: the connection failed, nothing could be applied (the watch loop backs off);
   * `role`: this role alone was refused, skipped by its timeout, or its receipt failed (the
   * others were applied).
   */
  readonly scope?: 'role' | 'database';
}

export interface CycleReport {
  readonly applied: readonly AppliedRole[];
  /** Delivered files that were not applied this cycle, each with why. */
  readonly failed: readonly FailedRole[];
  /** Roles whose delivered digest was already applied: no statement was sent for them. */
  readonly unchanged: number;
  /** The cycle could not run at all (directory unreadable, database unreachable): retry later. */
  readonly blocked: BatonError | undefined;
  /** The signal ended the cycle before every pending role was tried. */
  readonly aborted: boolean;
  /**
   * Roles the check found changed in the database this cycle. Each is put back on the next
   * cycle (then listed in `applied` with `restored`), unless its receipt could not record the
   * finding: then at once, since nothing would show it anyway.
   */
  readonly changed: readonly { readonly role: string; readonly found: ChangedFinding }[];
  /** PostgreSQL could not be reached or was lost: the only reason the watch loop backs off. */
  readonly databaseDown: boolean;
  /** Another provisioner holds this provider (who, as far as the database can tell): this one did nothing. */
  readonly busy?: string;
  /**
   * The connection kept open still applies, but a NEW login with the superuser's credential was
   * refused (its password changed by hand): the next reconnect is a lock-out, and the heartbeat
   * says so now rather than after the connection drops.
   */
  readonly loginRefused?: BatonError;
}

/** A refused role is retried after this, doubling up to the ceiling, or at once when its file changes. */
const ROLE_BACKOFF_FIRST_MS = 5_000;
const ROLE_BACKOFF_MAX_MS = 300_000;

/**
 * Every applied role is checked in the database at least this often, even when the roles'
 * fingerprint did not move: an expiry (VALID UNTIL) passes without changing any row.
 */
const FULL_CHECK_MS = 60_000;

/**
 * While a connection is kept open (--watch), a fresh login is tried at least this often: a
 * superuser password changed under a live session locks the provisioner out only at its next
 * reconnect, which may be days later. One handshake per 10 s instead of one per poll.
 */
const LOGIN_RECHECK_MS = 10_000;

/** The result of applying one role: applied, a problem with its file, or what the database (or the receipt) threw. */
type ApplyResult = AppliedRole | { readonly problem: string } | { readonly error: unknown };

/**
 * A role's secret read and turned into what the database stores (the secret itself is gone), with
 * the record of that verifier written ahead, not yet in place.
 */
type Ready = { readonly digest: SecretDigest; readonly verifier: string; readonly record: PendingVerifier };
type Prepared = Ready | { readonly problem: string };

/** Roles per transaction when applying many: one commit for them all, row locks held no longer than a chunk. */
const BATCH_ROLES = 250;
/** PBKDF2 verifiers computed at once (libuv's four threads). */
const VERIFIERS_AT_ONCE = 4;
/** Receipts written at once (each an fsync'd temp file and a rename). */
const RECEIPTS_AT_ONCE = 16;

interface Pending {
  /** The delivered file's name: the role, or an alternating pair's login file (`R+a`). */
  readonly role: string;
  /** Set for a login file: its group and login role. */
  readonly login?: LoginFile;
  readonly file: string;
  readonly digest: SecretDigest;
  /** The role was found changed in the database: this puts the delivered password back. */
  readonly repair?: ChangedFinding;
}

export class PostgresProvisioner {
  readonly deliveredDir: string;
  private readonly delivered: DeliveredCredentials;
  /** The receipts: what the database last accepted and what the check found, re-read only when changed. */
  private readonly receiptIndex: ReceiptIndex;
  /** The connection kept between cycles under --watch (keepConnectionOpen), re-opened after a failure. */
  private db: RoleDatabase | undefined;
  private keepOpen = false;
  /** When this provisioner last logged in afresh (a connection opened or a re-check), and a refusal since. */
  private loggedInAt = Number.NEGATIVE_INFINITY;
  /** The roles' fingerprint when a fresh login was last tried: a move means a password may have changed. */
  private loginFingerprint: string | undefined;
  private loginRefused: BatonError | undefined;
  /** What the database's roles looked like (RoleDatabase.fingerprint) when every role was last checked, and when. */
  private checked: { readonly fingerprint: string | undefined; readonly at: number } | undefined;
  /**
   * role → `<digest of the stored verifier>|<digest of the secret>` last seen to match, so an
   * idle cycle checks a role with one comparison instead of a key derivation. A digest of
   * `rolpassword`, never the verifier itself (it is as good as the password for logging in to
   * a server that accepts it).
   */
  private readonly verified = new Map<string, string>();
  /** key → the last problem logged for it, so a lasting problem is logged once, not every poll. */
  private readonly reported = new Map<string, string>();
  /**
   * Roles the database refused, with their own backoff: ONE BAD ROLE NEVER HOLDS THE OTHERS
   * BACK. It is skipped until its time comes (or its file changes) while every other role is
   * applied on every cycle, and the watch loop does not back off for it.
   */
  private readonly refused = new Map<
    string,
    { readonly digest: SecretDigest; readonly retryAt: number; readonly delayMs: number }
  >();
  /**
   * Login files seen applied that are gone (a pair switched back to a single role): each login
   * is set NOLOGIN and its receipt removed; kept here until that succeeded.
   */
  private readonly leaving = new Set<string>();
  /** The names delivered at this cycle's scan. */
  private present: ReadonlySet<string> = new Set();
  /** Groups switched back to a single role whose logins are not known NOLOGIN yet (switched-back-logins.ts). */
  private readonly switchedBack = new Set<string>();
  /** Whether this run has looked at every single group's logins once (closeSwitchedBack). */
  private switchedBackLooked = false;

  constructor(private readonly options: ProvisionerOptions) {
    this.deliveredDir = path.join(options.meshDir, 'provides', options.provider);
    this.delivered = new DeliveredCredentials(this.deliveredDir);
    this.receiptIndex = new ReceiptIndex(this.deliveredDir);
    this.census = new SessionCensus(this.deliveredDir, options.clock);
  }

  /**
   * Keeps the PostgreSQL connection open between cycles (the watch loop): a new connection
   * per poll is a TCP and SCRAM handshake every few seconds for as long as the machine is up.
   * A connection that failed is closed and the next cycle opens another. closeConnection()
   * ends it.
   */
  keepConnectionOpen(): void {
    this.keepOpen = true;
  }

  async closeConnection(): Promise<void> {
    this.keepOpen = false;
    // The directory watches (dir-changes.ts) go with the service.
    this.delivered.close();
    this.receiptIndex.close();

    const db = this.db;
    this.db = undefined;
    await db?.close();
  }

  private async database(signal: AbortSignal | undefined): Promise<RoleDatabase> {
    if (!this.db) {
      this.db = await this.options.connect(signal);
      this.loggedInAt = this.now();
      // The login just proven: the next fingerprint read is this login's (fullCheckDue).
      this.loginFingerprint = undefined;
      this.loginIsAccepted();
    } else await this.recheckLogin(signal);
    return this.db;
  }

  /**
   * A kept connection proves only that the login WAS accepted: every LOGIN_RECHECK_MS a fresh
   * connection is opened (the same credential files, in the same order, as a reconnect) and
   * closed at once. Refused, the cycle still applies on the open session and reports
   * `loginRefused`; any other failure says nothing about the credential and is retried later.
   * Also at once when the roles' fingerprint moved (loginAfterRolesMoved).
   */
  private async recheckLogin(signal: AbortSignal | undefined, force = false): Promise<void> {
    const now = this.now();
    if (!force && now - this.loggedInAt < LOGIN_RECHECK_MS) return;
    this.loggedInAt = now;
    // This try is the proof for the roles as they are now: the cycle's fingerprint read adopts them.
    if (!force) this.loginFingerprint = undefined;
    let fresh: RoleDatabase;
    try {
      fresh = await this.options.connect(signal);
    } catch (error) {
      if (error instanceof BatonError && error.reason === 'denied') {
        this.loginRefused = error;
        this.report(
          '*relogin*',
          `a new login is refused (${error.what}) — the open connection still applies, but the next reconnect is a lock-out`,
        );
      }
      return;
    }
    await fresh.close().catch(() => undefined);
    this.loginIsAccepted();
  }

  /**
   * A fresh login in the cycle whose fingerprint read (no query of its own) finds any role
   * changed since the last login was proven: a superuser password changed by hand is then said
   * on the very next cycle, not up to LOGIN_RECHECK_MS later (a status read four seconds after
   * the change said the provisioner was healthy while it could not log in).
   */
  private async loginAfterRolesMoved(fingerprint: string | undefined, signal?: AbortSignal): Promise<void> {
    if (fingerprint === undefined || !this.keepOpen) return;
    const known = this.loginFingerprint;
    this.loginFingerprint = fingerprint;
    if (known !== undefined && known !== fingerprint) await this.recheckLogin(signal, true);
  }

  private loginIsAccepted(): void {
    if (this.loginRefused && this.reported.has('*relogin*'))
      this.options.log('a new login is accepted again');
    this.loginRefused = undefined;
    this.clear('*relogin*');
  }

  /** After a cycle: kept for the next one, or closed (one-shot, or the connection failed). */
  private async endOfCycle(failed: boolean): Promise<void> {
    if (this.keepOpen && !failed) return;
    const db = this.db;
    this.db = undefined;
    await db?.close();
  }

  /**
   * Whether this cycle checks every applied role in the database: when the roles' fingerprint
   * (one short query; every role's state, verifier and memberships) moved since the last full
   * check, or FULL_CHECK_MS after it (an expiry passes without a row changing), or when the
   * database cannot give one. Otherwise nothing could have changed any of them.
   */
  private async fullCheckDue(db: RoleDatabase, signal?: AbortSignal): Promise<boolean> {
    const fingerprint = db.fingerprint ? await db.fingerprint() : undefined;
    await this.loginAfterRolesMoved(fingerprint, signal);
    const now = this.now();
    const due =
      fingerprint === undefined ||
      this.checked?.fingerprint !== fingerprint ||
      now - this.checked.at >= FULL_CHECK_MS;
    if (due) this.checked = { fingerprint, at: now };
    return due;
  }

  /** The roles' fingerprint after this cycle's own statements: what the next cycle compares with. */
  private async noteOwnChanges(db: RoleDatabase): Promise<void> {
    if (!this.checked || !db.fingerprint) return;
    this.checked = { fingerprint: await db.fingerprint(), at: this.checked.at };
  }
  /** app-truth: which logins the apps really use (session-census.ts), folded in after each check. */
  private readonly census: SessionCensus;

  async runCycle(signal?: AbortSignal): Promise<CycleReport> {
    const applied: AppliedRole[] = [];
    const failed: FailedRole[] = [];
    const changed: { role: string; found: ChangedFinding }[] = [];
    let unchanged = 0;
    const done = (
      extra: { blocked?: BatonError; aborted?: boolean; databaseDown?: boolean; busy?: string } = {},
    ): CycleReport => ({
      applied,
      failed,
      unchanged,
      changed,
      blocked: extra.blocked,
      aborted: extra.aborted ?? false,
      databaseDown: extra.databaseDown ?? false,
      ...(extra.busy !== undefined ? { busy: extra.busy } : {}),
      ...(this.loginRefused && this.db ? { loginRefused: this.loginRefused } : {}),
    });
    // The receipts known before this poll: a switch back to single removes a login file AND its
    // receipt between two polls, and only this listing still names the login to set NOLOGIN.
    const knownBefore = this.receiptIndex.listed();
    await this.delivered.settled();
    this.receiptIndex.refresh();
    this.removeStaleTemps();
    const scan = this.delivered.scan();
    if (!scan.ok) {
      const blocked = new BatonError('failed', {
        what: `The delivered credentials for provider "${this.options.provider}" cannot be listed: ${scan.problem}.`,
        where: this.deliveredDir,
        next:
          scan.problem === 'permission denied'
            ? `The provisioner runs as uid ${process.getuid?.() ?? '?'} and cannot read it: the mesh writes its directories 0700, owned by the user that delivers (root over ssh). Run the provisioner as root (User=root, as in the unit of docs/provisioner-service.md), or deliver as the user it runs as.`
            : 'Check --mesh-dir and --provider; the mesh creates this directory on the first rotation that reaches this machine.',
        changed: 'Nothing was applied.',
      });
      // The same what and next as `--once` prints, so a service's log says as much as a terminal.
      this.report(
        '*dir*',
        `nothing to apply yet: ${blocked.what} Where: ${this.deliveredDir} Next: ${blocked.next}`,
      );
      return done({ blocked });
    }
    this.clear('*dir*');

    const pending: Pending[] = [];
    const toCheck: Pending[] = [];
    const now = this.now();
    const present = new Set<string>();
    for (const credential of scan.credentials) {
      present.add(credential.role);
      if (credential.problem !== undefined) {
        failed.push({
          role: credential.role,
          file: credential.file,
          reason: credential.problem,
          inFile: true,
        });
        // The role is a file name found in the mesh dir, whatever was written there: shown, never raw.
        this.report(
          credential.role,
          `${shown(credential.role)} failed: ${shown(credential.file, 400)} ${credential.problem}`,
        );
        continue;
      }
      const receipt = this.receiptOf(credential.role);
      const login = parseLoginFileName(credential.role);
      const entry = {
        role: credential.role,
        file: credential.file,
        digest: credential.digest,
        ...(login ? { login } : {}),
      };
      if (receipt?.digest === credential.digest && !changedInDatabase(receipt)) {
        if (this.delivered.hasRolledBack(credential.role))
          this.forgetRolledBack(credential.file, receipt.digest);
        unchanged += 1;
        toCheck.push(entry);
        continue;
      }
      // A receipt that says the database lost this very credential (an earlier cycle found it, and
      // `mesh status` has shown it since): put it back.
      const repair =
        receipt?.digest === credential.digest
          ? (receipt.database?.found as ChangedFinding | undefined)
          : undefined;
      if (this.waitsForRetry(entry, now, failed)) continue;
      pending.push(repair ? { ...entry, repair } : entry);
    }
    this.present = present;
    const groupsAlone = this.alternatingChanges(present, knownBefore);
    for (const role of this.verified.keys()) if (!present.has(role)) this.verified.delete(role);
    for (const role of this.refused.keys()) if (!present.has(role)) this.refused.delete(role);
    // Keys are a role, `*<what>` for the provider, or `<role>*<what>`.
    for (const key of this.reported.keys())
      if (!key.startsWith('*') && !present.has(key.split('*')[0]!)) this.reported.delete(key);
    if (
      pending.length === 0 &&
      toCheck.length === 0 &&
      groupsAlone.length === 0 &&
      this.leaving.size === 0 &&
      this.switchedBack.size === 0
    )
      return done();

    let db: RoleDatabase;
    try {
      const lock = await this.options.lock?.acquire();
      if (lock && !lock.held) {
        // Not an error and not a backoff: the other one may stop at any time (a restart).
        this.report(
          '*lock*',
          `another provisioner for ${this.options.provider} is running: ${lock.holder}; this one waits and applies nothing until it stops`,
        );
        return done({ busy: lock.holder });
      }
      if (lock && this.reported.has('*lock*')) {
        this.clear('*lock*');
        this.options.log(
          `the other provisioner for ${this.options.provider} stopped: this one holds the provider now`,
        );
      }
      db = await this.database(signal);
    } catch (error) {
      const blocked =
        error instanceof BatonError
          ? error
          : new BatonError('failed', {
              what: `PostgreSQL cannot be reached (${messageOf(error)}).`,
              cause: error,
            });
      this.report('*db*', `not applied: ${blocked.what}${blocked.where ? ` Where: ${blocked.where}` : ''}`);
      for (const { role, file } of pending)
        failed.push({ role, file, reason: sentence(blocked.what), inFile: false, scope: 'database' });
      return done({ blocked, aborted: signal?.aborted ?? false, databaseDown: true });
    }
    this.clear('*db*');

    let blocked: BatonError | undefined;
    let aborted = false;
    const lost = (error: ConnectionLost, rest: readonly Pending[]) => {
      blocked = new BatonError('failed', {
        what: `PostgreSQL ${error.message}.`,
        where: this.deliveredDir,
        next: '--watch retries on its own; otherwise run again once the database is up.',
      });
      this.report('*db*', `not applied: ${blocked.what}`);
      for (const r of rest)
        failed.push({
          role: r.role,
          file: r.file,
          reason: sentence(blocked.what),
          inFile: false,
          scope: 'database',
        });
    };
    try {
      if (toCheck.length > 0) {
        try {
          const due = await this.fullCheckDue(db, signal);
          for (const { drift, recorded } of due ? await this.checkRoles(db, toCheck) : []) {
            changed.push({ role: drift.role, found: drift.repair! });
            unchanged -= 1;
            if (!recorded && !this.waitsForRetry(drift, now, failed)) pending.push(drift);
          }
        } catch (error) {
          if (!(error instanceof ConnectionLost)) throw error;
          lost(error, pending);
          return done({ blocked, databaseDown: true });
        }
      }
      // app-truth: the session census, on the cycle's own connection; never a reason to fail the cycle.
      if (db.activity) {
        const logins = [...present].map(loginOfFile);
        await db
          .activity(logins)
          .then((sessions) => this.census.observe(logins, sessions))
          // A lost connection shows at the next statement; the census only waits for the next cycle.
          .catch(() => undefined);
      }
      // Plain roles go in batches (one transaction, a savepoint per role: one commit for many
      // instead of one each); login files, with their group and sessions, one by one.
      let single = db.setPasswords ? pending.filter((p) => p.login) : pending;
      const batched = db.setPasswords ? pending.filter((p) => !p.login) : [];
      if (batched.length > 0 && !signal?.aborted) {
        const batch = await this.applyBatch(db, batched);
        for (const [item, result] of batch.results) await this.settle(item, result, applied, failed);
        if (batch.lost) lost(batch.lost, [...batch.rest, ...single]);
        else if (batch.rest.length > 0) single = [...batch.rest, ...single];
      }
      for (const [index, item] of single.entries()) {
        if (blocked) break;
        if (signal?.aborted) {
          aborted = true;
          break;
        }
        let result: ApplyResult;
        try {
          result = await this.applyOne(db, item);
        } catch (error) {
          if (error instanceof ConnectionLost) {
            lost(error, single.slice(index));
            break;
          }
          result = { error };
        }
        await this.settle(item, result, applied, failed);
      }
      if (!blocked && !aborted) {
        try {
          await this.closeGroups(db, groupsAlone);
          await this.closeSwitchedBack(db, present);
          await this.disableLeaving(db);
          await this.endRequestedSessions(db, present);
        } catch (error) {
          if (!(error instanceof ConnectionLost)) throw error;
          lost(error, []);
        }
      }
      // A role applied may be this provisioner's own login: the next cycle logs in afresh to know.
      if (applied.length > 0) this.loggedInAt = Number.NEGATIVE_INFINITY;
      if (!blocked && applied.length + changed.length > 0)
        await this.noteOwnChanges(db).catch(() => {
          this.checked = undefined; // checked in full next cycle
        });
    } finally {
      await this.endOfCycle(blocked !== undefined);
    }
    return done({ blocked, aborted, databaseDown: blocked !== undefined });
  }

  /** A plain file for `group` is delivered too: a pair being switched, whose consumer still logs in as the group. */
  private plainDelivered(group: string): boolean {
    return this.present.has(group);
  }

  /**
   * What the scan says about alternating pairs, on disk only: login files that went away since
   * they were applied (queued in `leaving`), and the groups whose logins are delivered without a
   * plain file — returned, to be kept NOLOGIN, their plain receipt removed (what it said no
   * longer holds).
   */
  private alternatingChanges(present: ReadonlySet<string>, knownBefore: ReadonlySet<string>): string[] {
    const receipts = this.receiptIndex.listed();
    // Only a name ending in +a/+b can be a login file: the regex is not run on thousands of roles per poll.
    for (const names of [knownBefore, receipts])
      for (const name of names)
        if (isLoginShaped(name) && parseLoginFileName(name) && !present.has(name)) this.leaving.add(name);
    for (const name of this.leaving) if (present.has(name)) this.leaving.delete(name);
    const groups = new Set<string>();
    for (const name of present) {
      const login = isLoginShaped(name) ? parseLoginFileName(name) : undefined;
      if (login && !present.has(login.group)) groups.add(login.group);
    }
    for (const group of groups) {
      if (!receipts.has(group)) continue;
      try {
        rmSync(path.join(receiptsDir(this.deliveredDir), group), { force: true });
        this.receiptIndex.removed(group);
        this.options.log(`${group}: its file is gone and its logins carry the pair; removed its receipt`);
      } catch (error) {
        this.report(
          `*receipt*${group}`,
          `${group}: its receipt could not be removed (${describeFsError(error)})`,
        );
      }
    }
    return [...groups];
  }

  /**
   * A pair switched back to a single role keeps neither login (switched-back-logins.ts). Asked
   * for every single group once per run — the first cycle that connects, since the switch's
   * `retire` took the login files AND their receipts, so after a restart nothing on disk says a
   * group was ever alternating — and then for a group one of whose login files is leaving. An
   * idle cycle sends nothing more.
   */
  private async closeSwitchedBack(db: RoleDatabase, present: ReadonlySet<string>): Promise<void> {
    // Looked once already, nothing leaving and nothing pending: an idle cycle has nothing to ask.
    if (this.switchedBackLooked && this.leaving.size === 0 && this.switchedBack.size === 0) return;
    const single = new Set(singleGroups(present));
    if (!this.switchedBackLooked) for (const group of single) this.switchedBack.add(group);
    for (const name of this.leaving) {
      const group = parseLoginFileName(name)!.group;
      if (single.has(group)) this.switchedBack.add(group);
    }
    for (const group of this.switchedBack) if (!single.has(group)) this.switchedBack.delete(group);
    const settled = await closeSwitchedBackLogins(db, [...this.switchedBack], present, (login, line) =>
      this.disable(db, login, line, true),
    );
    for (const group of settled) this.switchedBack.delete(group);
    this.switchedBackLooked = true;
  }

  /** A group whose logins carry the pair alone is NOLOGIN: the consumer's file names a login now. */
  private async closeGroups(db: RoleDatabase, groups: readonly string[]): Promise<void> {
    if (groups.length === 0) return;
    const stored = await db.inspect(groups);
    for (const group of groups) {
      if (!stored.get(group)?.canLogin) continue;
      await this.disable(
        db,
        group,
        `${group} set NOLOGIN: its plain file is gone, its logins carry the pair`,
      );
    }
  }

  /** Each login whose file went away becomes NOLOGIN, and its receipt goes (nothing is applied for it any more). */
  private async disableLeaving(db: RoleDatabase): Promise<void> {
    for (const name of [...this.leaving]) {
      const login = parseLoginFileName(name)!.login;
      if (!(await this.disable(db, login, `${login} set NOLOGIN: its file ${name} is gone`, true))) continue;
      try {
        rmSync(path.join(receiptsDir(this.deliveredDir), name), { force: true });
        this.receiptIndex.removed(name);
        this.leaving.delete(name);
        this.clear(`*receipt*${name}`);
      } catch (error) {
        this.report(
          `*receipt*${name}`,
          `${name}: its receipt could not be removed (${describeFsError(error)})`,
        );
      }
    }
  }

  /** `ALTER ROLE … NOLOGIN`, logged once when it changed something; a refusal is logged and retried next cycle. */
  private async disable(db: RoleDatabase, role: string, line: string, quietIfNoop = false): Promise<boolean> {
    try {
      const changed = await db.disableLogin(role);
      this.clear(`*disable*${role}`);
      if (changed || !quietIfNoop) this.options.log(line);
      return true;
    } catch (error) {
      if (error instanceof ConnectionLost) throw error;
      const why =
        error instanceof RoleSkipped
          ? `skipped this cycle: ${error.message}`
          : `the database refused it (${messageOf(error)})`;
      this.report(`*disable*${role}`, `${role} could not be set NOLOGIN: ${why}; tried again next cycle`);
      return false;
    }
  }

  /** The end-sessions request for this login file, when it asks for exactly this digest. */
  private endRequestFor(name: string, digest: SecretDigest): string | undefined {
    const file = path.join(this.deliveredDir, END_SESSIONS_DIR, name);
    try {
      return readFileSync(file, 'utf8').trim() === digest ? file : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * End-sessions requests (`.end-sessions/<login file>`, holding the digest of the login file it
   * is for): once exactly that digest is applied — the login no longer accepts the password its
   * sessions logged in with — those sessions are ended, the count recorded in the receipt, and
   * the request removed. A request for another digest waits.
   */
  private async endRequestedSessions(db: RoleDatabase, present: ReadonlySet<string>): Promise<void> {
    const dir = path.join(this.deliveredDir, END_SESSIONS_DIR);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names.sort()) {
      // A request being staged (`R+a.next`, its temp file) is not one yet: the mesh renames it into place.
      if (!isDeliveredName(name)) continue;
      const file = path.join(dir, name);
      const login = parseLoginFileName(name);
      if (!login) {
        this.report(
          `*end*${name}`,
          `end-sessions request ${file} ignored: ${name} is not a login file name (<role>+a or <role>+b)`,
        );
        continue;
      }
      let wanted: string;
      try {
        wanted = readFileSync(file, 'utf8').trim();
      } catch (error) {
        this.report(
          `*end*${name}`,
          `end-sessions request ${file} cannot be read (${describeFsError(error)})`,
        );
        continue;
      }
      const receipt = this.receiptOf(name);
      if (!present.has(name) || receipt?.digest !== wanted || changedInDatabase(receipt)) continue;
      let ended: number;
      let sessions;
      try {
        ended = await db.endSessions(login.login);
        sessions = await db.sessions(login.login);
      } catch (error) {
        if (error instanceof ConnectionLost) throw error;
        this.report(
          `*end*${name}`,
          `${login.login}: its sessions could not be ended (${messageOf(error)}); tried again next cycle`,
        );
        continue;
      }
      const recorded = await this.rewriteReceipt({ ...receipt, sessions, ended_sessions: ended });
      this.options.log(
        `${login.login}: ended ${ended} session${ended === 1 ? '' : 's'} on request (${digestPrefix(receipt.digest)} applied)`,
      );
      if (!recorded) continue;
      try {
        rmSync(file, { force: true });
        this.clear(`*end*${name}`);
      } catch (error) {
        this.report(
          `*end*${name}`,
          `end-sessions request ${file} could not be removed (${describeFsError(error)})`,
        );
      }
    }
  }

  /** A role the database refused waits for its own retry time (or a new file); true when it waits. */
  private waitsForRetry(entry: Pending, now: number, failed: FailedRole[]): boolean {
    const refused = this.refused.get(entry.role);
    if (refused?.digest !== entry.digest || now >= refused.retryAt) return false;
    failed.push({
      role: entry.role,
      file: entry.file,
      reason: `skipped until its retry (the database refused it; retried every ${Math.round(refused.delayMs / 1000)} s)`,
      inFile: false,
      scope: 'role',
    });
    return true;
  }

  /**
   * Checks each role whose receipt matches its file against `pg_authid`; a role changed there
   * has its receipt say so, and the next cycle's scan reads that receipt and puts the role back
   * (a restart too). `recorded: false` when the receipt could not be rewritten: that role is put
   * back at once. A receipt from before these checks gets its first.
   */
  private async checkRoles(
    db: RoleDatabase,
    roles: readonly Pending[],
  ): Promise<{ drift: Pending; recorded: boolean }[]> {
    const stored = await db.inspect(roles.map(databaseRole));
    const drifted: { drift: Pending; recorded: boolean }[] = [];
    for (const entry of roles) {
      const role = stored.get(databaseRole(entry));
      const found = await this.findingOf(entry, role);
      if (found === undefined) continue;
      const receipt = this.receiptOf(entry.role)!;
      if (found === 'as-set') {
        if (receipt.database === undefined)
          await this.rewriteReceipt({
            ...receipt,
            database: { found, since: this.isoNow(), verifier: storedDigest(role?.verifier ?? '') },
          });
        continue;
      }
      const recorded = await this.rewriteReceipt({ ...receipt, database: { found, since: this.isoNow() } });
      this.options.log(
        `${entry.role} changed in the database: ${DATABASE_FINDING_WORDS[found]}; ${recorded ? 'the delivered password is put back on the next cycle' : 'putting the delivered password back now'}`,
      );
      drifted.push({ drift: { ...entry, repair: found }, recorded });
    }
    return drifted;
  }

  /** What the database holds for a role, as a finding; undefined when its file changed since the scan (applied next cycle). */
  private async findingOf(
    entry: Pending,
    stored: StoredRole | undefined,
  ): Promise<DatabaseFinding | undefined> {
    if (!stored) return 'dropped';
    if (!stored.canLogin) return 'nologin';
    if (stored.expired) return 'expired';
    if (entry.login && stored.memberOf !== undefined && !stored.memberOf.includes(entry.login.group))
      return 'not-member';
    const verifierDigest = storedDigest(stored.verifier ?? '');
    const key = `${verifierDigest}|${entry.digest}`;
    if (this.verified.get(entry.role) === key) return 'as-set';
    // The verifier this provisioner set for this very credential (its receipt says so).
    if (this.receiptOf(entry.role)?.database?.verifier === verifierDigest) {
      this.verified.set(entry.role, key);
      return 'as-set';
    }
    const read = readSecretFile(entry.file);
    if (read.problem !== undefined) return undefined;
    try {
      if (secretDigest(read.secret) !== entry.digest) return undefined;
      if (!(await scramMatches(stored.verifier, read.secret))) return 'password-changed';
    } finally {
      read.secret.fill(0);
    }
    this.verified.set(entry.role, key);
    return 'as-set';
  }

  /** A role found changed that could not be put back: its receipt and the log say why. */
  private async recordProblem(role: string, problem: string): Promise<void> {
    const receipt = this.receiptOf(role);
    if (!receipt?.database || receipt.database.found === 'as-set' || receipt.database.problem === problem)
      return;
    this.report(
      `${role}*repair`,
      `${role} changed in the database (${DATABASE_FINDING_WORDS[receipt.database.found]}) and could not be put back: ${problem}`,
    );
    await this.rewriteReceipt({ ...receipt, database: { ...receipt.database, problem } });
  }

  /** A receipt rewrite that only records a check: a failure is logged (false), and the check repeats next cycle. */
  private async rewriteReceipt(receipt: Receipt): Promise<boolean> {
    try {
      await writeReceipt(this.deliveredDir, receipt);
      this.receiptIndex.wrote(receipt);
      this.clear(`${receipt.role}*receipt`);
      return true;
    } catch (error) {
      this.report(
        `${receipt.role}*receipt`,
        `${receipt.role}: its receipt could not be updated with the database check (${describeFsError(error)})`,
      );
      return false;
    }
  }

  /**
   * Temp receipts (`.<role>.tmp-<hex>`) left by a provisioner killed between writing and
   * renaming one: nothing reads them, and nothing else would ever remove them.
   */
  private removeStaleTemps(): void {
    const dir = this.receiptIndex.dir;
    const now = Date.now();
    for (const name of this.receiptIndex.listed()) {
      if (!isTempReceipt(name)) continue;
      const file = path.join(dir, name);
      try {
        const st = statSync(file, { throwIfNoEntry: false });
        if (!st) {
          this.receiptIndex.removed(name);
          continue;
        }
        if (now - st.mtimeMs < STALE_TEMP_MS) continue;
        rmSync(file, { force: true });
        this.receiptIndex.removed(name);
        this.options.log(`removed ${file}, a temp receipt left by a provisioner that was stopped mid-write`);
      } catch {
        // Not removable: tried again next cycle.
      }
    }
  }

  /** What one role's application came to, in the report and the log. */
  private async settle(item: Pending, result: ApplyResult, applied: AppliedRole[], failed: FailedRole[]) {
    const { role, file, digest, repair } = item;
    if ('problem' in result) {
      failed.push({ role, file, reason: result.problem, inFile: true });
      this.report(role, `${role} failed: ${file} ${result.problem}`);
      return;
    }
    if ('error' in result) {
      const { error } = result;
      if (error instanceof BatonError) {
        // The receipt could not be written: retried next cycle (same password, harmless).
        failed.push({ role, file, reason: sentence(error.what), inFile: false, scope: 'role' });
        this.report(role, `${role} failed: ${sentence(error.what)}`);
        return;
      }
      if (error instanceof RoleSkipped) {
        // Not the role's fault and not the database's: tried again next cycle, no backoff.
        const reason = `skipped this cycle: ${error.message}`;
        failed.push({ role, file, reason, inFile: false, scope: 'role' });
        this.report(role, `${role} ${reason}; the other roles go on`);
        if (repair) await this.recordProblem(role, reason);
        return;
      }
      const reason = `the database refused it (${messageOf(error)})`;
      const before = this.refused.get(role);
      const delayMs =
        before?.digest === digest ? Math.min(ROLE_BACKOFF_MAX_MS, before.delayMs * 2) : ROLE_BACKOFF_FIRST_MS;
      this.refused.set(role, { digest, retryAt: this.now() + delayMs, delayMs });
      failed.push({ role, file, reason, inFile: false, scope: 'role' });
      this.report(
        role,
        `${role} failed: ${reason}; skipped (retried in ${Math.round(delayMs / 1000)} s or when its file changes), the other roles go on`,
      );
      if (repair) await this.recordProblem(role, reason);
      return;
    }
    applied.push(result);
    this.refused.delete(role);
    this.clear(role);
    this.clear(`${role}*repair`);
    this.options.log(
      `${role} ${digestPrefix(result.digest)} ${repair ? `restored (${DATABASE_FINDING_WORDS[repair]})` : result.outcome}`,
    );
    if (result.copied) {
      const { group, slot } = item.login!;
      this.options.log(
        `${loginRole(group, otherSlot(slot))} created with ${group}'s stored verifier: it accepts the password ${group}'s consumer holds`,
      );
    }
  }

  /**
   * Plain roles in chunks of BATCH_ROLES: the verifiers computed a few at a time (PBKDF2 runs
   * on libuv's threads), each chunk set in one transaction (RoleDatabase.setPasswords), then
   * its receipts written. A connection lost mid-way returns what was applied before it, and
   * the rest; a chunk the database refused as a whole (its COMMIT failed) goes back to the
   * caller to be applied one by one.
   */
  private async applyBatch(
    db: RoleDatabase,
    items: readonly Pending[],
  ): Promise<{ results: [Pending, ApplyResult][]; rest: Pending[]; lost?: ConnectionLost }> {
    const results: [Pending, ApplyResult][] = [];
    for (let at = 0; at < items.length; at += BATCH_ROLES) {
      const chunk = items.slice(at, at + BATCH_ROLES);
      // The verifiers are derived a few at a time while the transaction opens and the first
      // statements run (setPasswords takes them as they come): the two overlap instead of adding up.
      const preparing = inTurn(chunk, VERIFIERS_AT_ONCE, (item) => this.prepare(item));
      let outcomes: ReadonlyMap<string, RoleOutcome | Error> | undefined;
      let failure: unknown;
      try {
        outcomes = await db.setPasswords!(
          chunk.map((item, i) => ({
            role: item.role,
            verifier: preparing[i]!.then((ready) => ('problem' in ready ? undefined : ready.verifier)),
          })),
        );
      } catch (error) {
        failure = error;
      }
      const prepared = await Promise.all(preparing);
      const send: { item: Pending; ready: Ready }[] = [];
      chunk.forEach((item, i) => {
        const ready = prepared[i]!;
        if ('problem' in ready) results.push([item, ready]);
        else send.push({ item, ready });
      });
      try {
        if (send.length === 0) continue;
        if (outcomes === undefined) {
          const rest = [...send.map((s) => s.item), ...items.slice(at + BATCH_ROLES)];
          if (failure instanceof ConnectionLost) return { results, rest, lost: failure };
          return { results, rest };
        }
        const answered = outcomes;
        const finished = await mapBounded(
          send,
          RECEIPTS_AT_ONCE,
          async ({ item, ready }): Promise<ApplyResult> => {
            const outcome = answered.get(item.role);
            if (outcome === undefined) return { error: new Error('the database gave no answer for it') };
            if (outcome instanceof Error) return { error: outcome };
            try {
              return await this.finish(db, item, ready, outcome, false);
            } catch (error) {
              return { error };
            }
          },
        );
        send.forEach(({ item }, i) => results.push([item, finished[i]!]));
      } finally {
        // The records written ahead for roles not applied (refused, unanswered, the chunk lost)
        // are taken back; an applied one's is in place already, and this removes nothing of it.
        await Promise.all(send.map(({ ready }) => ready.record.abandon()));
      }
    }
    return { results, rest: [] };
  }

  /** Reads the secret (again: it may have been replaced since the scan): its digest and verifier, the secret dropped. Never rejects. */
  private async prepare(item: Pending): Promise<Prepared> {
    const read = readSecretFile(item.file);
    if (read.problem !== undefined) return { problem: read.problem };
    try {
      const digest = secretDigest(read.secret);
      // A credential applied before (a roll-back put it back) gets the very verifier it had, salt
      // included: the line a pooler on another machine had put back for it matches the database again.
      const login = item.login?.login ?? item.role;
      let verifier: string;
      try {
        const before = await keptVerifier(this.deliveredDir, login, digest);
        verifier =
          before !== undefined && (await scramMatches(before, read.secret))
            ? before
            : await scramVerifier(read.secret);
      } catch (error) {
        return { problem: `its verifier could not be computed (${messageOf(error)})` };
      }
      // The verifier's record is written before the database is asked, so the window between
      // the database taking it and the receipt holds only the record's rename. One that cannot
      // be written leaves the role unapplied this cycle: the database is not changed without it.
      try {
        const record = await prepareAppliedVerifier(this.deliveredDir, login, { digest, verifier });
        return { digest, verifier, record };
      } catch (error) {
        return {
          problem: `its verifier could not be recorded for a pooler at ${appliedVerifierPath(this.deliveredDir, login)} (${describeFsError(error)}); not applied, the next cycle tries again`,
        };
      }
    } finally {
      read.secret.fill(0);
    }
  }

  /**
   * Reads the secret (again: it may have been replaced since the scan), sets the role's
   * password from it, and writes the receipt of exactly what was applied.
   */
  private async applyOne(db: RoleDatabase, item: Pending): Promise<AppliedRole | { problem: string }> {
    const { role, login } = item;
    const ready = await this.prepare(item);
    if ('problem' in ready) return ready;
    try {
      let outcome: RoleOutcome;
      let copied = false;
      if (login) {
        const { group, slot } = login;
        ({ outcome, copied } = await db.setLogin({
          group,
          login: login.login,
          other: loginRole(group, otherSlot(slot)),
          verifier: ready.verifier,
          groupLogin: this.plainDelivered(group),
        }));
      } else {
        outcome = await db.setPassword(role, ready.verifier);
      }
      return await this.finish(db, item, ready, outcome, copied);
    } finally {
      // Not applied (refused, the connection lost): the record written ahead is taken back.
      await ready.record.abandon();
    }
  }

  /** After the database took it: the end-sessions request (a login), then the receipt of exactly what was applied. */
  private async finish(
    db: RoleDatabase,
    item: Pending,
    ready: Ready,
    outcome: RoleOutcome,
    copied: boolean,
  ): Promise<AppliedRole> {
    const { role, repair, login } = item;
    const { digest, verifier } = ready;
    const verifierDigest = storedDigest(verifier);
    this.verified.set(role, `${verifierDigest}|${digest}`);
    const at = this.isoNow();
    // `restored` only when the same credential was put back; a new one is a plain application.
    const restored = repair && digest === item.digest ? repair : undefined;
    // A request to end this login's sessions for exactly this password is carried out BEFORE the
    // receipt: `mesh rotate --end-sessions` reads the first receipt with the new digest as the
    // revoke's outcome, so that receipt must already say how many sessions were ended.
    const request = login ? this.endRequestFor(role, digest) : undefined;
    const ended =
      request && login
        ? await db.endSessions(login.login).catch((error: unknown) => {
            if (error instanceof ConnectionLost) throw error;
            return undefined; // tried again by endRequestedSessions on a later cycle
          })
        : undefined;
    // A login's receipt names its open sessions: who still uses it, for a revocation to name.
    // Only a list: failing to read it must not turn an applied password into a refused one.
    const sessions = login
      ? await db.sessions(login.login).catch((error: unknown) => {
          if (error instanceof ConnectionLost) throw error;
          return undefined;
        })
      : undefined;
    const receipt: Receipt = {
      role,
      digest,
      applied_at: at,
      database: { found: 'as-set', since: at, ...(restored ? { restored } : {}), verifier: verifierDigest },
      ...(login
        ? {
            login: login.login,
            ...(sessions ? { sessions } : {}),
            ...(ended !== undefined ? { ended_sessions: ended } : {}),
          }
        : {}),
    };
    try {
      // Before the receipt: a controller that saw it finds the verifier a pooler on another machine needs.
      await ready.record.commit();
    } catch (error) {
      throw new BatonError('failed', {
        what: `The database accepted the credential but its verifier could not be recorded for a pooler (${describeFsError(error)}); its receipt is not written, and the next cycle tries again`,
        where: appliedVerifierPath(this.deliveredDir, login ? login.login : role),
      });
    }
    if (this.options.pooler) {
      // The pooler holds the login's verifier too: the receipt says "applied" only once it does.
      try {
        await this.options.pooler.set(login ? login.login : role, verifier);
      } catch (error) {
        throw new BatonError('failed', {
          what: `The database accepted the credential but the pooler's auth_file could not be given it (${messageOf(error)}); its receipt is not written, and the next cycle tries again`,
          where: this.options.pooler.file,
        });
      }
    }
    try {
      await writeReceipt(this.deliveredDir, receipt);
    } catch (error) {
      // The database has it but `mesh rotate` cannot know: not recorded as applied, so the
      // next cycle sets the same password again (harmless) and retries the receipt.
      throw new BatonError('failed', {
        what: `The database accepted the credential but its receipt could not be written (${describeFsError(error)})`,
        where: path.join(receiptsDir(this.deliveredDir), role),
      });
    }
    this.receiptIndex.wrote(receipt);
    if (request && ended !== undefined) {
      this.options.log(
        `${login!.login}: ended ${ended} session${ended === 1 ? '' : 's'} on request (${digestPrefix(digest)} applied)`,
      );
      try {
        rmSync(request, { force: true });
      } catch (error) {
        this.report(
          `*end*${role}`,
          `end-sessions request ${request} could not be removed (${describeFsError(error)})`,
        );
      }
    }
    return { role, digest, outcome, ...(restored ? { restored } : {}), ...(copied ? { copied } : {}) };
  }

  /**
   * The database holds the delivered password again (the receipt matches the live file), so
   * the password a roll-back kept aside is no longer the only way in: removed — unless it is
   * the receipt's own password (a roll-back landed between this scan and now), which stays.
   */
  private forgetRolledBack(file: string, applied: SecretDigest): void {
    const kept = rolledBackPath(file);
    const read = readSecretFile(kept);
    if (read.problem === undefined) {
      const same = secretDigest(read.secret) === applied;
      read.secret.fill(0);
      if (same) return;
    }
    try {
      rmSync(kept, { force: true });
    } catch {
      // Tried again next cycle.
    }
  }

  private now(): number {
    return (this.options.clock?.() ?? new Date()).getTime();
  }

  private isoNow(): string {
    return (this.options.clock?.() ?? new Date()).toISOString();
  }

  /**
   * The role's receipt, re-read only when the receipts directory changed (ReceiptIndex). A
   * receipt removed under a running provisioner (a mesh roll-back does so) asks for the role to
   * be set again: the database may hold another password than the one last set here.
   */
  private receiptOf(role: string): Receipt | null {
    return this.receiptIndex.get(role) ?? null;
  }

  private report(key: string, line: string): void {
    if (this.reported.get(key) === line) return;
    this.reported.set(key, line);
    this.options.log(line);
  }

  private clear(key: string): void {
    this.reported.delete(key);
  }
}

/**
 * `fn` over `items`, at most `limit` running, item i starting when item i - limit is done; one
 * promise per item, in order, so a caller can use each result as soon as it is there. `fn` must
 * not reject.
 */
function inTurn<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R>[] {
  const started: Promise<R>[] = [];
  for (const [i, item] of items.entries())
    started.push(i < limit ? fn(item) : started[i - limit]!.then(() => fn(item)));
  return started;
}

/** Whether `name` ends like a login file (`+a`/`+b`): a cheap test before parseLoginFileName's. */
function isLoginShaped(name: string): boolean {
  return name.length > 2 && name.charCodeAt(name.length - 2) === 0x2b; /* + */
}

/** The role a delivered file sets in the database: the login of a login file, else the role itself. */
function databaseRole(entry: Pending): string {
  return entry.login?.login ?? entry.role;
}

/** A digest of a stored verifier: what may be kept of it (the verifier itself is as good as a password). */
function storedDigest(verifier: string): string {
  return `sha256:${createHash('sha256').update(verifier).digest('hex')}`;
}

/** A message as a clause inside another sentence: without its final period. */
function sentence(text: string): string {
  return text.replace(/\.$/, '');
}
