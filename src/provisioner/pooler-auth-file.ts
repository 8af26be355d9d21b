/**
 * A pgbouncer auth_file kept by the provisioner beside the database (docs/inventory.md,
 * "Poolers"): after the database took a login's new verifier and BEFORE its receipt is written,
 * the same verifier string replaces that login's line in the pooler's auth_file, then RELOAD on
 * the pooler's admin console. pgbouncer logs in to PostgreSQL with an auth_file verifier only
 * when it is the server's own, salt included — so the line is written from the verifier just
 * set, never derived again — and a receipt seen by `mesh rotate` means the pooler has it too.
 *
 * The file holds one `"login" "secret"` line per login (pgbouncer's format: each field in double
 * quotes, a `"` inside written `""`); only the rotated login's line changes, every other line
 * (other logins, comments) is kept byte for byte.
 */
import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  chownSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { withAuthLine } from '../mesh/pooler-auth-line.js';

export interface PoolerAuthFileOptions {
  readonly file: string;
  /** RELOAD on the pooler's admin console: resolves once the pooler has read the file again. */
  readonly reload: () => Promise<void>;
}

/**
 * Sets lines as the provisioner applies roles. Roles are finished a few at once, so the lines
 * asked for while a write runs wait and go together in the next one: one rewrite and one RELOAD
 * per batch, and never two writers of one file.
 */
export class PoolerAuthFile {
  private pending = new Map<string, string>();
  private waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  private running: Promise<void> | undefined;

  constructor(private readonly options: PoolerAuthFileOptions) {}

  /** Resolves once `user`'s line holds `verifier` and the pooler was told to RELOAD. */
  set(user: string, verifier: string): Promise<void> {
    this.pending.set(user, verifier);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.running ??= this.drain();
    return done;
  }

  private async drain(): Promise<void> {
    // A turn first: the roles of one chunk, finished together, join one write.
    await new Promise((r) => setImmediate(r));
    while (this.pending.size > 0) {
      const lines = this.pending;
      const waiters = this.waiters;
      this.pending = new Map();
      this.waiters = [];
      try {
        this.write(lines);
        await this.options.reload();
        for (const w of waiters) w.resolve();
      } catch (error) {
        for (const w of waiters) w.reject(error);
      }
    }
    this.running = undefined;
  }

  /** Temp file beside it (its mode and owner), fsync, rename, fsync the directory: pgbouncer reads the old file or the new one. */
  private write(lines: ReadonlyMap<string, string>): void {
    const { file } = this.options;
    const before = statSync(file);
    let text = readFileSync(file, 'utf8');
    for (const [user, verifier] of lines) text = withAuthLine(text, user, verifier);
    const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}`);
    writeFileSync(temp, text, { mode: before.mode & 0o777, flag: 'wx' });
    chownSync(temp, before.uid, before.gid);
    const fd = openSync(temp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    const dir = openSync(path.dirname(file), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}

/** The pooler's admin console (the `pgbouncer` database) as `provision postgres` is told it. */
export interface PoolerAdmin {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** A 0600 file holding the admin user's password; none over the Unix socket pgbouncer's own OS user may use. */
  readonly passwordFile?: string;
}

/** RELOAD on the admin console: answered once pgbouncer has read its files again. */
export function adminConsoleReload(admin: PoolerAdmin): () => Promise<void> {
  return async () => {
    const password =
      admin.passwordFile === undefined
        ? undefined
        : readFileSync(admin.passwordFile, 'utf8').replace(/\r?\n$/, '');
    const client = new pg.Client({
      host: admin.host,
      port: admin.port,
      user: admin.user,
      database: 'pgbouncer',
      connectionTimeoutMillis: 10_000,
      ...(password === undefined ? {} : { password }),
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('RELOAD');
    } catch (error) {
      throw new Error(
        `RELOAD on the pooler's admin console ${admin.user}@${admin.host}:${admin.port}/pgbouncer failed: ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      await client.end().catch(() => undefined);
    }
  };
}
