/**
 * One provider's provisioner: makes PostgreSQL accept what the mesh delivered to
 * `<mesh_dir>/provides/<provider>/`, and writes a receipt per role once it has.
 *
 * `runCycle` is one reconciliation, callable in-process (the CLI, `--watch`, the drill and the
 * benchmark all use it). Between cycles it keeps DIGESTS, never secrets: the secret is read
 * from its file only while its verifier is computed, and dropped right after.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { digestPrefix, secretDigest, type SecretDigest } from '../mesh/digest.js';
import { DeliveredCredentials, describeFsError, readSecretFile } from './delivered-credentials.js';
import { ConnectionLost, messageOf, type ConnectRoleDatabase, type RoleDatabase, type RoleOutcome } from './postgres-roles.js';
import { readReceiptDigest, receiptsDir, writeReceipt } from './receipts.js';
import { scramVerifier } from './scram-verifier.js';

export interface ProvisionerOptions {
  readonly meshDir: string;
  readonly provider: string;
  readonly connect: ConnectRoleDatabase;
  /** One plain line per change (created / updated / failed); never a secret. */
  readonly log: (line: string) => void;
  readonly clock?: () => Date;
}

export interface AppliedRole {
  readonly role: string;
  readonly digest: SecretDigest;
  readonly outcome: RoleOutcome;
}

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
   * `role`: this role alone was refused or its receipt failed (the others were applied).
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
}

/** A refused role is retried after this, doubling up to the ceiling, or at once when its file changes. */
const ROLE_BACKOFF_FIRST_MS = 5_000;
const ROLE_BACKOFF_MAX_MS = 300_000;

export class PostgresProvisioner {
  readonly deliveredDir: string;
  private readonly delivered: DeliveredCredentials;
  /** role → the digest the database last accepted (from this process or a receipt); null = none. */
  private readonly applied = new Map<string, SecretDigest | null>();
  /** key → the last problem logged for it, so a lasting problem is logged once, not every poll. */
  private readonly reported = new Map<string, string>();
  /**
   * Roles the database refused, with their own backoff: ONE BAD ROLE NEVER HOLDS THE OTHERS
   * BACK. It is skipped until its time comes (or its file changes) while every other role is
   * applied on every cycle, and the watch loop does not back off for it.
   */
  private readonly refused = new Map<string, { readonly digest: SecretDigest; readonly retryAt: number; readonly delayMs: number }>();

  constructor(private readonly options: ProvisionerOptions) {
    this.deliveredDir = path.join(options.meshDir, 'provides', options.provider);
    this.delivered = new DeliveredCredentials(this.deliveredDir);
  }

  async runCycle(signal?: AbortSignal): Promise<CycleReport> {
    const applied: AppliedRole[] = [];
    const failed: FailedRole[] = [];
    let unchanged = 0;
    const scan = this.delivered.scan();
    if (!scan.ok) {
      const blocked = new BatonError('failed', {
        what: `The delivered credentials for provider "${this.options.provider}" cannot be listed: ${scan.problem}.`,
        where: this.deliveredDir,
        next: scan.problem === 'permission denied'
          ? `The provisioner runs as uid ${process.getuid?.() ?? '?'} and cannot read it: the mesh writes its directories 0700, owned by the user that delivers (root over ssh). Run the provisioner as root (User=root, as in the README's unit), or deliver as the user it runs as.`
          : 'Check --mesh-dir and --provider; the mesh creates this directory on the first rotation that reaches this machine.',
        changed: 'Nothing was applied.',
      });
      this.report('*dir*', `nothing to apply yet: ${this.deliveredDir} cannot be listed (${scan.problem})`);
      return { applied, failed, unchanged, blocked, aborted: false };
    }
    this.clear('*dir*');

    const pending: { role: string; file: string; digest: SecretDigest }[] = [];
    const now = this.now();
    const present = new Set<string>();
    for (const credential of scan.credentials) {
      present.add(credential.role);
      if (credential.problem !== undefined) {
        failed.push({ role: credential.role, file: credential.file, reason: credential.problem, inFile: true });
        this.report(credential.role, `${credential.role} failed: ${credential.file} ${credential.problem}`);
      } else if (this.appliedDigest(credential.role) === credential.digest) {
        unchanged += 1;
        this.clear(credential.role);
      } else {
        const refused = this.refused.get(credential.role);
        if (refused?.digest === credential.digest && now < refused.retryAt) {
          failed.push({ role: credential.role, file: credential.file, reason: `skipped until its retry (the database refused it; retried every ${Math.round(refused.delayMs / 1000)} s)`, inFile: false, scope: 'role' });
          continue;
        }
        pending.push({ role: credential.role, file: credential.file, digest: credential.digest });
      }
    }
    for (const role of this.applied.keys()) if (!present.has(role)) this.applied.delete(role);
    for (const role of this.refused.keys()) if (!present.has(role)) this.refused.delete(role);
    for (const key of this.reported.keys()) if (!key.startsWith('*') && !present.has(key)) this.reported.delete(key);
    if (pending.length === 0) return { applied, failed, unchanged, blocked: undefined, aborted: false };

    let db: RoleDatabase;
    try {
      db = await this.options.connect(signal);
    } catch (error) {
      const blocked = error instanceof BatonError ? error : new BatonError('failed', { what: `PostgreSQL cannot be reached (${messageOf(error)}).`, cause: error });
      this.report('*db*', `not applied: ${blocked.what}${blocked.where ? ` Where: ${blocked.where}` : ''}`);
      for (const { role, file } of pending) failed.push({ role, file, reason: sentence(blocked.what), inFile: false, scope: 'database' });
      return { applied, failed, unchanged, blocked, aborted: signal?.aborted ?? false };
    }
    this.clear('*db*');

    let blocked: BatonError | undefined;
    let aborted = false;
    try {
      for (const [index, { role, file, digest }] of pending.entries()) {
        if (signal?.aborted) {
          aborted = true;
          break;
        }
        try {
          const outcome = await this.applyOne(db, role, file);
          if ('problem' in outcome) {
            failed.push({ role, file, reason: outcome.problem, inFile: true });
            this.report(role, `${role} failed: ${file} ${outcome.problem}`);
            continue;
          }
          applied.push(outcome);
          this.refused.delete(role);
          this.clear(role);
          this.options.log(`${role} ${digestPrefix(outcome.digest)} ${outcome.outcome}`);
        } catch (error) {
          if (error instanceof ConnectionLost) {
            blocked = new BatonError('failed', {
              what: `PostgreSQL ${error.message}.`,
              where: this.deliveredDir,
              next: '--watch retries on its own; otherwise run again once the database is up.',
            });
            this.report('*db*', `not applied: ${blocked.what}`);
            for (const rest of pending.slice(index)) failed.push({ role: rest.role, file: rest.file, reason: sentence(blocked.what), inFile: false, scope: 'database' });
            break;
          }
          if (error instanceof BatonError) {
            // The receipt could not be written: retried next cycle (same password, harmless).
            failed.push({ role, file, reason: sentence(error.what), inFile: false, scope: 'role' });
            this.report(role, `${role} failed: ${sentence(error.what)}`);
            continue;
          }
          const reason = `the database refused it (${messageOf(error)})`;
          const before = this.refused.get(role);
          const delayMs = before?.digest === digest ? Math.min(ROLE_BACKOFF_MAX_MS, before.delayMs * 2) : ROLE_BACKOFF_FIRST_MS;
          this.refused.set(role, { digest, retryAt: this.now() + delayMs, delayMs });
          failed.push({ role, file, reason, inFile: false, scope: 'role' });
          this.report(role, `${role} failed: ${reason}; skipped (retried in ${Math.round(delayMs / 1000)} s or when its file changes), the other roles go on`);
        }
      }
    } finally {
      await db.close();
    }
    return { applied, failed, unchanged, blocked, aborted };
  }

  /**
   * Reads the secret (again: it may have been replaced since the scan), sets the role's
   * password from it, and writes the receipt of exactly what was applied.
   */
  private async applyOne(db: RoleDatabase, role: string, file: string): Promise<AppliedRole | { problem: string }> {
    const read = readSecretFile(file);
    if (read.problem !== undefined) return { problem: read.problem };
    let digest: SecretDigest;
    let verifier: string;
    try {
      digest = secretDigest(read.secret);
      verifier = await scramVerifier(read.secret);
    } finally {
      read.secret.fill(0);
    }
    const outcome = await db.setPassword(role, verifier);
    try {
      await writeReceipt(this.deliveredDir, { role, digest, applied_at: (this.options.clock?.() ?? new Date()).toISOString() });
    } catch (error) {
      // The database has it but `mesh rotate` cannot know: not recorded as applied, so the
      // next cycle sets the same password again (harmless) and retries the receipt.
      throw new BatonError('failed', {
        what: `The database accepted the credential but its receipt could not be written (${describeFsError(error)})`,
        where: path.join(receiptsDir(this.deliveredDir), role),
      });
    }
    this.applied.set(role, digest);
    return { role, digest, outcome };
  }

  private now(): number {
    return (this.options.clock?.() ?? new Date()).getTime();
  }

  private appliedDigest(role: string): SecretDigest | null {
    let digest = this.applied.get(role);
    // A receipt removed under a running provisioner (a mesh roll-back does so) asks for the role
    // to be set again: the database may hold another password than the one last set here.
    if (digest !== undefined && readReceiptDigest(this.deliveredDir, role) === undefined) digest = undefined;
    if (digest === undefined) {
      digest = readReceiptDigest(this.deliveredDir, role) ?? null;
      this.applied.set(role, digest);
    }
    return digest;
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

/** A message as a clause inside another sentence: without its final period. */
function sentence(text: string): string {
  return text.replace(/\.$/, '');
}
