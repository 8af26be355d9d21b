/**
 * Writes the provisioner's heartbeat after every `--watch` cycle (src/mesh/provisioner-heartbeat.ts
 * says what it holds and who reads it). Atomic like a receipt (temp file → fsync → rename), so
 * `mesh status` reads the last cycle's or the one before, never half of one. A failure to write
 * is logged once and never stops the provisioner: applying passwords matters more than saying so.
 * It is written in `.provisioner/`, never in the provider directory itself: the idle poll trusts
 * that directory's stat, and a rename there every cycle made every idle cycle list all names.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import {
  formatHeartbeat,
  HEARTBEAT_DIR,
  HEARTBEAT_FILE,
  HEARTBEAT_FORMAT,
  LEGACY_HEARTBEAT_FILE,
  type Heartbeat,
  type HeartbeatLogin,
  type HeartbeatPooler,
} from '../mesh/provisioner-heartbeat.js';
import type { CycleReport } from './postgres-provisioner.js';
import { messageOf } from './postgres-roles.js';

/**
 * Whether the cycle logged in: a connection refused for its password (reason `denied`, SQLSTATE
 * 28P01/28000) is a lock-out — so is a fresh login refused while the kept connection still works
 * (CycleReport.loginRefused) —, any other failure to connect an unreachable database; a cycle that
 * connected — or had nothing to connect for — is `ok`. Undefined: another provisioner holds the
 * provider, whose own heartbeat is the one that counts.
 */
export function loginOf(report: CycleReport): { login: HeartbeatLogin; reason?: string } | undefined {
  if (report.busy !== undefined) return undefined;
  // Still applying on the session kept open, but refused at the next reconnect: a lock-out waiting to happen.
  if (report.loginRefused)
    return {
      login: 'refused',
      reason: `${report.loginRefused.what} The connection it kept open still applies until it drops.`,
    };
  if (!report.databaseDown) return { login: 'ok' };
  const blocked = report.blocked;
  const reason = blocked?.what;
  const login = blocked?.reason === 'denied' ? 'refused' : 'unreachable';
  return reason === undefined ? { login } : { login, reason };
}

/** mkdir's EEXIST as a value: the directory was made by an earlier cycle (or run). */
function exists(error: unknown): 'exists' {
  if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
  throw error;
}

export interface HeartbeatWriter {
  /** After each cycle. */
  cycle(report: CycleReport): Promise<void>;
  /** When the watch ends (SIGTERM): says it stopped, rather than going silent. */
  stopped(): Promise<void>;
}

export function heartbeatWriter(options: {
  readonly deliveredDir: string;
  readonly provider: string;
  readonly superuser: string;
  readonly intervalMs: number;
  readonly log: (line: string) => void;
  readonly clock?: () => Date;
  /** `--pooler-auth-file` and its admin console: stated so `mesh rotate` can check the inventory agrees. */
  readonly pooler?: HeartbeatPooler;
}): HeartbeatWriter {
  const clock = options.clock ?? (() => new Date());
  let lastOkAt: string | undefined;
  let failing = false;
  let legacyRemoved = false;
  const dir = path.join(options.deliveredDir, HEARTBEAT_DIR);
  const write = async (login: HeartbeatLogin, reason?: string) => {
    const at = clock().toISOString();
    if (login === 'ok') lastOkAt = at;
    const heartbeat: Heartbeat = {
      format: HEARTBEAT_FORMAT,
      provider: options.provider,
      at,
      interval_ms: options.intervalMs,
      login,
      ...(reason !== undefined ? { reason } : {}),
      superuser: options.superuser,
      ...(lastOkAt !== undefined ? { last_ok_at: lastOkAt } : {}),
      host: os.hostname(),
      pid: process.pid,
      ...(options.pooler ? { pooler: options.pooler } : {}),
    };
    const temp = path.join(dir, `.${HEARTBEAT_FILE}.tmp-${randomBytes(6).toString('hex')}`);
    try {
      // Not recursive: the provider directory is the mesh's to make (before the first rotation
      // it is not there, and ENOENT below says nothing). 0700 set explicitly: mkdir's mode is umasked.
      if ((await mkdir(dir, { mode: 0o700 }).catch(exists)) !== 'exists') await chmod(dir, 0o700);
      await writeExclusive(temp, Buffer.from(formatHeartbeat(heartbeat)), 0o600);
      await renameDurably(temp, path.join(dir, HEARTBEAT_FILE));
      // An older provisioner's heartbeat beside the delivered files would otherwise say `stopped`
      // or `silent` to a reader that finds no new one; removed once (one change of the directory).
      if (!legacyRemoved) await rm(path.join(options.deliveredDir, LEGACY_HEARTBEAT_FILE), { force: true });
      legacyRemoved = true;
      if (failing) options.log('the heartbeat is written again');
      failing = false;
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      // Before the first rotation the directory may not exist yet: nothing to say then.
      if (!failing && (error as NodeJS.ErrnoException).code !== 'ENOENT')
        options.log(
          `the heartbeat could not be written (${messageOf(error)}); mesh status cannot see this provisioner`,
        );
      failing = true;
    }
  };
  return {
    async cycle(report) {
      const login = loginOf(report);
      if (login) await write(login.login, login.reason);
    },
    stopped: () => write('stopped'),
  };
}
