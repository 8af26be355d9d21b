/**
 * The provisioner's heartbeat, `<mesh_dir>/provides/<provider>/.provisioner/heartbeat`: what its last cycle
 * found — when it ran, whether it could log in to PostgreSQL, and why not. A receipt says what
 * the database accepted ONCE; only the heartbeat says the provisioner can still apply anything.
 * Without it a provisioner locked out by a password changed by hand (or a database that is
 * down) left every pair `✓ applied` while each later rotation stalled waiting for a receipt.
 *
 * The file is written by `baton provision postgres --watch` (src/provisioner/heartbeat.ts) and
 * read by `mesh status` through the transport, like a receipt. Its text is outside text: it is
 * parsed strictly and every string in it reaches a terminal only through `shown`.
 */
import { z } from 'zod';
import { nextStep, type Said } from '../next-step.js';
import { shown } from '../outside-text.js';
import { parseJsonRecord } from './json-record.js';

/**
 * Its own subdirectory, not the provider directory: a heartbeat renamed into the provider
 * directory every cycle moved that directory's mtime, so the idle poll's change detector
 * (src/provisioner/dir-changes.ts) never found it unchanged and listed every delivered name
 * again each cycle. A rename inside a subdirectory moves only the subdirectory's stat, and an
 * inotify watch on the parent hears nothing of it.
 */
export const HEARTBEAT_DIR = '.provisioner';
export const HEARTBEAT_FILE = 'heartbeat';
/** Where provisioners before round 7 wrote it (still read, so an older provisioner is not `none`). */
export const LEGACY_HEARTBEAT_FILE = '.heartbeat';
export const HEARTBEAT_FORMAT = 'baton.provisioner-heartbeat/1';

/**
 * `ok`: it logged in this cycle; `refused`: PostgreSQL refused its superuser login; `unreachable`:
 * PostgreSQL could not be reached; `stopped`: it was stopped (SIGTERM) and said so.
 */
export type HeartbeatLogin = 'ok' | 'refused' | 'unreachable' | 'stopped';

export interface Heartbeat {
  readonly format: typeof HEARTBEAT_FORMAT;
  readonly provider: string;
  /** When the cycle ended, on the provider machine's clock. */
  readonly at: string;
  /** The `--interval` it cycles at: the reader's measure of "too long ago". */
  readonly interval_ms: number;
  readonly login: HeartbeatLogin;
  /** Why it could not log in (PostgreSQL's own words, outside text), when it could not. */
  readonly reason?: string;
  /** The role it logs in as (`--superuser`): status names the pair that delivers its password. */
  readonly superuser: string;
  /** The last cycle that logged in, if any since it started. */
  readonly last_ok_at?: string;
  readonly host: string;
  readonly pid: number;
  /**
   * The pgbouncer auth_file it keeps and the admin console it sends RELOAD to, as its
   * `--pooler-*` flags told it (absent: it keeps none, or it predates this field). `mesh rotate`
   * refuses when the inventory's pooler names another (poolers.ts `poolerTargetRefusal`).
   */
  readonly pooler?: HeartbeatPooler;
}

/** What a provisioner keeping a pooler's auth_file was told: the file, `host:port` and the admin user. */
export interface HeartbeatPooler {
  readonly auth_file: string;
  readonly admin: string;
  readonly admin_user: string;
}

/** The heartbeat of a provider's provisioner (`dir` is `<mesh_dir>/provides/<provider>`). */
export function heartbeatPath(providerDir: string): string {
  return `${providerDir.replace(/\/+$/, '')}/${HEARTBEAT_DIR}/${HEARTBEAT_FILE}`;
}

/** Where an older provisioner (before round 7) writes it: beside the delivered files. */
export function legacyHeartbeatPath(providerDir: string): string {
  return `${providerDir.replace(/\/+$/, '')}/${LEGACY_HEARTBEAT_FILE}`;
}

export function formatHeartbeat(heartbeat: Heartbeat): string {
  return `${JSON.stringify(heartbeat)}\n`;
}

const PASSWORD_FILE = {
  placeholder: 'FILE',
  readFrom: "a file (0600) holding the superuser's current password, exactly",
};

const MAX_TEXT = 4096;

/**
 * The heartbeat's schema, made on first use. Its strings are short (1 KiB) and its times parse,
 * so a damaged or hostile file cannot make status print pages or compare against NaN; a field
 * of the wrong type, or a login state this baton does not know, is "not a heartbeat".
 */
let heartbeatSchema: z.ZodType<Heartbeat> | undefined;
function schemaOfHeartbeat(): z.ZodType<Heartbeat> {
  const text = z.string().max(1024);
  const time = text.refine((v) => !Number.isNaN(Date.parse(v)));
  return (heartbeatSchema ??= z.object({
    format: z.literal(HEARTBEAT_FORMAT),
    provider: text,
    at: time,
    interval_ms: z.number().positive(),
    login: z.enum(['ok', 'refused', 'unreachable', 'stopped']),
    reason: text.optional(),
    superuser: text,
    last_ok_at: time.optional(),
    host: text,
    pid: z.number(),
    pooler: z.object({ auth_file: text, admin: text, admin_user: text }).optional(),
  }));
}

/** A heartbeat, or undefined when the text is not one (damaged, another format, absurd sizes). */
export function parseHeartbeat(text: string): Heartbeat | undefined {
  if (text.length > MAX_TEXT) return undefined;
  return parseJsonRecord(schemaOfHeartbeat(), text);
}

/**
 * A heartbeat older than this is a provisioner that stopped cycling (killed, hung, its machine
 * asleep): five intervals, and never under a minute, so the watch loop's backoff while the
 * database is down (at most 30 s) and a few seconds of clock skew between the provider machine
 * and this one are not mistaken for it.
 */
export function staleAfterMs(heartbeat: Pick<Heartbeat, 'interval_ms'>): number {
  return Math.max(60_000, 5 * heartbeat.interval_ms);
}

/**
 * What `mesh status` makes of a provider's heartbeat. `none`: no heartbeat (a provisioner that
 * predates it, or run `--once` by hand): nothing is claimed either way. `unread`: the machine
 * could not be read (the pairs say so already).
 */
export type ProvisionerHealth =
  | { readonly state: 'ok' | 'none' | 'unread'; readonly provider: string; readonly machine: string }
  | {
      readonly state: 'locked-out' | 'database-down' | 'stopped' | 'silent' | 'unreadable';
      readonly provider: string;
      readonly machine: string;
      /** One sentence: what is wrong, naming the provisioner and the file. */
      readonly detail: string;
      /** The way out (a sentence that may name a command). */
      readonly next: Said;
    };

/**
 * `superuserPair` finds the pair of the mesh that delivers a role's password (the provisioner's
 * own, `provider:consumer`), so a lock-out names the seed that mends it; `superuserFile` the
 * file the provisioner reads that password from by default (`<mesh_dir>/consumes/<provider>/<role>`).
 */
export function provisionerHealth(
  provider: string,
  machine: string,
  file: string,
  text: string | undefined,
  nowMs: number,
  superuserPair: (role: string) => string | undefined = () => undefined,
  superuserFile: (role: string) => string | undefined = () => undefined,
): ProvisionerHealth {
  if (text === undefined) return { state: 'none', provider, machine };
  const heartbeat = parseHeartbeat(text);
  const who = `the provisioner of ${provider} on ${machine}`;
  if (!heartbeat)
    return {
      state: 'unreadable',
      provider,
      machine,
      detail: `${who}: its heartbeat ${file} is not one baton can read`,
      next: [
        `Check the provisioner's log on ${machine}; it rewrites the file on its next cycle (remove it if it was left by something else).`,
      ],
    };
  const ageMs = nowMs - Date.parse(heartbeat.at);
  const ago = `${Math.max(0, Math.round(ageMs / 1000))} s ago`;
  // Re-rendered from the parsed time: the file's own text never reaches the terminal.
  const iso = (time: string) => new Date(Date.parse(time)).toISOString();
  const lastOk = heartbeat.last_ok_at ? `; it last logged in at ${iso(heartbeat.last_ok_at)}` : '';
  const why = heartbeat.reason === undefined ? '' : ` (${shown(heartbeat.reason)})`;
  if (heartbeat.login === 'stopped')
    return {
      state: 'stopped',
      provider,
      machine,
      detail: `${who} was stopped at ${iso(heartbeat.at)}: nothing delivered since is applied`,
      next: [
        `Start it again on ${machine} (its unit runs `,
        nextStep('provision postgres --watch'),
        '); a rotation until then stalls waiting for its receipt.',
      ],
    };
  if (ageMs > staleAfterMs(heartbeat))
    return {
      state: 'silent',
      provider,
      machine,
      detail: `${who} last reported ${ago} (it cycles every ${heartbeat.interval_ms / 1000} s): it is not running, or hangs`,
      next: [
        `Check it on ${machine} (its unit's status and log) and start it; a rotation until then stalls waiting for its receipt.`,
      ],
    };
  if (heartbeat.login === 'refused') {
    const pair = superuserPair(heartbeat.superuser);
    const suFile = superuserFile(heartbeat.superuser);
    // The file is named, never read: what it holds is a secret, and only the provisioner compares it.
    const mismatch = `Its superuser file ${suFile === undefined ? `on ${machine}` : `${shown(suFile)} on ${machine} (or the one its --superuser-file names)`} no longer matches the database's password for ${shown(heartbeat.superuser)}: `;
    return {
      state: 'locked-out',
      provider,
      machine,
      detail: `${who} cannot log in: PostgreSQL refused its superuser login as ${shown(heartbeat.superuser)} ${ago}${why}${lastOk}`,
      next: pair
        ? [
            `${mismatch}restore the password in the database if it was changed by hand, or re-seed both ends of its pair with the role's current password: `,
            nextStep(`mesh seed --pair ${pair} --from-file`, { placeholders: [PASSWORD_FILE] }),
            '. Nothing is applied until it logs in.',
          ]
        : [
            `${mismatch}restore the password in the database if it was changed by hand, or write the role's current password to that file (0600). Nothing is applied until it logs in.`,
          ],
    };
  }
  if (heartbeat.login === 'unreachable')
    return {
      state: 'database-down',
      provider,
      machine,
      detail: `${who} cannot reach PostgreSQL (${ago})${why}${lastOk}`,
      next: [
        "Start the database (or fix the provisioner's --pg-host/--pg-port); it retries on its own. Nothing is applied until then.",
      ],
    };
  return { state: 'ok', provider, machine };
}

/** Whether `mesh status` may still say ✓ for this provider's pairs. */
export function provisionerHealthy(health: ProvisionerHealth): boolean {
  return health.state === 'ok' || health.state === 'none' || health.state === 'unread';
}
