/**
 * The words of `baton mesh status`, shared by the plain output, the JSON and the table: one
 * mark and one word per state, ages in one format, and the next step for each state — so a
 * pipe, a script and a screen never disagree about what a pair needs.
 */
import { formatAge } from '../mesh/credential-age.js';
import {
  countStates,
  PAIR_STATES,
  sortWorstFirst,
  type PairState,
  type PairStatus,
} from '../mesh/mesh-status.js';
import { nextStep as step, renderSaidBare, saidSteps, type Placeholder, type Said } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import { MARKS, type Mark } from './marks.js';
import { shown } from '../outside-text.js';
import { APP_BEHIND_CODE, appBehindCode } from '../mesh/app-behind-guard.js';
import { confirmedJson, confirmedText } from './confirmed-text.js';

/** What `mesh seed --from-file` reads: the operator names the file, so it is a placeholder, never a word to paste. */
const PASSWORD_FILE: Placeholder = {
  placeholder: 'FILE',
  readFrom: 'a file (0600) holding the password the database already has for the role',
};

/** The longest state word (`changed-in-db`), so plain rows stay aligned. */
const STATE_WIDTH = Math.max(...PAIR_STATES.map((s) => s.length));

export const STATE_MARKS: Record<PairState, Mark> = {
  unreachable: MARKS.refused,
  drifted: MARKS.refused,
  'changed-in-db': MARKS.refused,
  'app-behind': MARKS.refused,
  staged: MARKS.action,
  pending: MARKS.busy,
  applied: MARKS.ok,
};

/** What to do about a pair in this state, as text and commands; undefined when nothing. */
export function pairNext(status: PairStatus): Said | undefined {
  const pairKey = `${status.pair.provider}:${status.pair.consumer}`;
  const rotate = step(`mesh rotate --pair ${pairKey}`);
  const recheck = step('mesh status');
  const resume = status.resumeId === undefined ? undefined : step(`mesh resume ${status.resumeId}`);
  const rollback = status.resumeId === undefined ? undefined : step(`mesh rollback ${status.resumeId}`);
  // A rotation under way: anything else suggested now would be refused (exit 5).
  if (status.running !== undefined) return [`running — wait for it (${status.running}), then `, recheck];
  if (status.takeBackOnly && rollback) return ['it never finished preparing; take it back: ', rollback];
  if (status.finishOnly && resume)
    return ['the switch back to single did not finish (its logins still log in); finish it: ', resume];
  switch (status.state) {
    case 'unreachable':
      return [
        `make ${status.unreadable.map((u) => u.machine).join(' and ')} reachable, then run `,
        recheck,
        ' again',
      ];
    case 'drifted':
      // Never delivered, nothing tells whether the role exists: no receipt was ever written.
      // Seeding is right only for a role that does; a role that does not exist yet is created
      // by the provisioner when a rotation delivers it a password.
      return status.neverDelivered
        ? [
            'if the role exists in the database, seed it with the password it has: ',
            step(`mesh seed --pair ${pairKey} --from-file`, { placeholders: [PASSWORD_FILE] }),
            `; if it does not exist yet, create it: `,
            rotate,
            ` (the provisioner on ${status.pair.providerMachine} creates the role it is delivered)`,
          ]
        : ['rotate it: ', rotate];
    case 'changed-in-db':
      return status.database?.problem
        ? [
            `fix what keeps the provisioner on ${status.pair.providerMachine} from putting it back (its log names it), then `,
            recheck,
          ]
        : [
            `nothing by hand: the provisioner on ${status.pair.providerMachine} puts the delivered password back; if this stays, check its log`,
          ];
    case 'app-behind':
      return [
        `restart ${status.pair.consumer}'s app on ${status.pair.consumerMachine} (or give it a reload: in the inventory and restart it once); a rotation of the pair is refused until the app is seen on ${status.logins?.live ?? 'the live login'} — check again with `,
        recheck,
        '; to rotate anyway, breaking that app: ',
        step(`mesh rotate --pair ${pairKey} --app-behind`, { placeholders: [APP_BEHIND_CODE] }),
        status.app?.behind ? ` (code ${appBehindCode(pairKey, status.app.behind)})` : '',
      ];
    case 'staged':
      return resume && rollback
        ? ['finish it: ', resume, ', or roll it back: ', rollback]
        : [
            "no rotation in this mesh's journal prepared it: remove the staged file by hand (it is never read), then rotate (",
            rotate,
            ')',
          ];
    case 'pending':
      return resume && rollback
        ? [
            `check the provisioner on ${status.pair.providerMachine}; once it applies, `,
            resume,
            ' (or roll it back: ',
            rollback,
            ')',
          ]
        : [`check the provisioner on ${status.pair.providerMachine}`];
    case 'applied':
      if (status.app?.takes === 'reload-failed')
        return [
          `restart ${status.pair.consumer}'s app on ${status.pair.consumerMachine} by hand and fix its reload: in the inventory; the next rotation reloads it again (`,
          rotate,
          ')',
        ];
      // The revoke asked for did not take effect: the fresh passwords of another rotation are the way to it.
      if (status.revokeNotDone)
        return [
          `revoke it: rotate the pair once more with --revoke-previous, which gives both logins fresh passwords and refuses ${status.revokeNotDone.login}'s old one: `,
          step(
            `mesh rotate --pair ${pairKey} --revoke-previous${status.revokeNotDone.endSessions ? ' --end-sessions' : ''}`,
          ),
        ];
      return status.tooOld ? ['older than the limit: ', rotate] : undefined;
    default: {
      const never: never = status.state;
      return [String(never)];
    }
  }
}

/**
 * The same as one line. Its commands keep the flags the operator gave (`s`): a bare
 * `baton mesh resume` would read another journal.
 */
export function nextStep(status: PairStatus, s: Suggester = PLAIN_SUGGESTER): string | undefined {
  const said = pairNext(status);
  return said && renderSaidBare(s, said);
}

/** `rotated 3d 4h ago (file mtime)`, `never rotated`: the age as a phrase. */
export function rotatedText(status: PairStatus): string {
  if (!status.lastRotated || status.ageMs === undefined) return 'never rotated';
  return `rotated ${formatAge(status.ageMs)} ago${status.lastRotated.source === 'file-mtime' ? ' (file mtime)' : ''}`;
}

export function summaryText(statuses: readonly PairStatus[]): string {
  const counts = countStates(statuses);
  const parts = PAIR_STATES.filter((s) => counts[s] > 0).map((s) => `${counts[s]} ${s}`);
  const old = statuses.filter((s) => s.tooOld).length;
  return `${statuses.length} pair${statuses.length === 1 ? '' : 's'}: ${parts.join(', ') || 'none'}${old > 0 ? `; ${old} older than --max-age` : ''}.`;
}

/** Plain lines for a pipe or a log: one per pair, worst first, then what to do. */
export function meshStatusLines(
  statuses: readonly PairStatus[],
  selectorText: string,
  s: Suggester = PLAIN_SUGGESTER,
  /** Now, for the age of sessions still open on a left login. */
  nowMs: number = Date.now(),
): string[] {
  const sorted = sortWorstFirst(statuses);
  const lines = [`Mesh status (${selectorText}), read-only: digests only, no secret was read.`];
  for (const status of sorted) {
    const last = status.lastRotation
      ? `; last rotation ${status.lastRotation.id} ${status.lastRotation.outcome}`
      : '';
    lines.push(
      `${STATE_MARKS[status.state].glyph} ${status.state.padEnd(STATE_WIDTH)} ${status.pair.key} (role ${status.pair.role}, ${status.pair.providerMachine} → ${status.pair.consumerMachine}) ${rotatedText(status)}${status.tooOld ? ' [older than --max-age]' : ''}${last}`,
    );
    if (status.state !== 'applied') lines.push(`    ${status.detail}`);
    const logins = loginsText(status);
    if (logins) lines.push(`    logins: ${logins}`);
    // app-truth: how the app takes it; never a mark of its own unless there is evidence.
    if (status.app && status.state !== 'app-behind') lines.push(`    app: ${appText(status)}`);
    // `applied` says only what was confirmed: each step's own mark (confirmed.ts).
    if (status.confirmed && (status.state === 'applied' || status.state === 'app-behind'))
      lines.push(`    confirmed: ${confirmedText(status.confirmed)}`);
    const open = leftOpenText(status, nowMs);
    if (open) lines.push(`    sessions: ${open}`);
    const armed = armedText(status);
    if (armed) lines.push(`    armed: ${armed}`);
    const notRevoked = notRevokedText(status);
    if (notRevoked) lines.push(`    not revoked: ${notRevoked}`);
    const next = nextStep(status, s);
    if (next) lines.push(`    next: ${next}`);
  }
  lines.push(summaryText(statuses));
  return lines;
}

/**
 * An alternating pair's logins in words (`live web1_app_a; other web1_app_b valid`); undefined
 * for a single pair, whose lines stay as they were.
 */
export function loginsText(status: PairStatus): string | undefined {
  const logins = status.logins;
  if (!logins) return undefined;
  if (logins.live === undefined && status.unreadable.some((u) => u.machine === status.pair.consumerMachine))
    return `unknown: ${status.pair.consumerMachine} could not be read`;
  if (logins.live === undefined)
    return `the consumer end names no login yet (a pair being switched to alternating): it uses ${status.pair.role}`;
  if (logins.other?.state === 'copied') {
    return `live ${logins.live}; other ${logins.other.login} valid (no file of its own yet: it holds ${status.pair.role}'s password from before the switch, copied by the provisioner; the next rotation gives it its own)`;
  }
  return `live ${logins.live}; other ${logins.other ? `${logins.other.login} ${logins.other.state}` : 'unknown'}`;
}

/** app-truth: the app's part in words: `reloaded at …`, `re-reads per connection (seen …)`, `not known (…)`. */
export function appText(status: PairStatus): string {
  const app = status.app;
  if (!app) return 'not known';
  switch (app.takes) {
    case 'reloaded':
      return `reloaded at ${app.reloadedAt ?? '?'} (exit 0)`;
    case 're-reads':
      return `re-reads per connection (seen: a session on ${status.logins?.live ?? status.pair.role} at ${app.seenAt ?? '?'}, after the move)`;
    case 'reload-failed':
      return `${MARKS.refused.glyph} RELOAD FAILED — ${app.detail}`;
    case 'behind':
      return `${MARKS.refused.glyph} BEHIND — ${app.detail}`;
    case 'not-known':
      return `not known (no reload: configured, and no new session on ${status.logins?.live ?? status.pair.role} seen since the move)`;
  }
}

/**
 * Sessions still open on the login the consumer left (or a revoked one), in words: a revoked
 * or left password does not end a connection already open, so status names them (issue 45: two
 * sessions on web2_app_a went unsaid). Undefined when none is open.
 */
export function leftOpenText(status: PairStatus, nowMs: number): string | undefined {
  const open = status.app?.leftOpen;
  if (!open) return undefined;
  const state = status.logins?.other?.login === open.login ? status.logins.other.state : undefined;
  const age =
    open.oldest === null
      ? ''
      : `, the oldest started ${open.oldest} (${ageText(nowMs - Date.parse(open.oldest))} ago)`;
  return `${open.open} still open on ${open.login}${state === 'revoked' ? ' (revoked: its password no longer opens a session, but these stay open)' : ', the login its file left'}${age}`;
}

/**
 * A `--revoke-previous` not yet applied, in the words the rotation's summary used ("the request
 * stays ARMED"): what its provisioner does when it next applies, and that until then the old
 * password may still work (issue 45: a revoke said "NOT revoked" was applied a minute later,
 * ending two sessions nobody was told about). Undefined when none is armed.
 */
export function armedText(status: PairStatus): string | undefined {
  const armed = status.armedRevoke;
  if (!armed) return undefined;
  const open = status.app?.leftOpen?.login === armed.login ? status.app.leftOpen.open : undefined;
  const sessions = armed.endSessions
    ? ` and END ${open === undefined ? 'its open sessions' : `its ${open} open session${open === 1 ? '' : 's'}`} (--end-sessions)`
    : '';
  return `the provisioner on ${status.pair.providerMachine} will refuse ${armed.login}'s old password${sessions} when it next applies (a --revoke-previous not applied yet); until then the old password may still work`;
}

/**
 * A `--revoke-previous` that did not take effect (revokeOf): the left login keeps its old
 * password. Said beside `applied`, since the rotation itself finished; undefined otherwise.
 */
export function notRevokedText(status: PairStatus): string | undefined {
  const not = status.revokeNotDone;
  if (!not) return undefined;
  const by = status.lastRotation ? ` of rotation ${status.lastRotation.id}` : '';
  const staged = not.staged
    ? `; the fresh password staged beside its file (.next) was delivered nowhere, and the next rotation of the pair replaces it`
    : '';
  return `the --revoke-previous${by} did not take effect: its fresh password never went live, so ${not.login} keeps its old password, which MAY STILL WORK${staged}`;
}

function ageText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** app-truth: the app's part for the JSON (names, times and counts; never a secret). */
function appJson(status: PairStatus): object | null {
  const app = status.app;
  if (!app) return null;
  return {
    takes: app.takes,
    detail: app.detail,
    reloaded_at: app.reloadedAt ?? null,
    seen_at: app.seenAt ?? null,
    left_open_sessions: app.leftOpen
      ? { login: app.leftOpen.login, open: app.leftOpen.open, oldest_start: app.leftOpen.oldest }
      : null,
    behind: app.behind
      ? {
          login: app.behind.login,
          sessions_since_move: app.behind.sessions,
          newest: app.behind.newest,
          clients: app.behind.clients,
          override_code: appBehindCode(`${status.pair.provider}:${status.pair.consumer}`, app.behind),
        }
      : null,
    reload: app.reload
      ? {
          result: app.reload.result,
          exit_code: app.reload.exitCode ?? null,
          duration_ms: app.reload.durationMs,
          at: app.reload.at,
          stderr: app.reload.stderr.map((line) => shown(line)),
        }
      : null,
  };
}

/** An alternating pair's `credential` and `logins` for the JSON (names and states only, never a digest); nothing for a single pair. */
function loginsJson(status: PairStatus): object {
  const logins = status.logins;
  if (!logins) return {};
  return {
    credential: 'alternating',
    logins: {
      live: logins.live ?? null,
      other: logins.other ? { login: logins.other.login, state: logins.other.state } : null,
    },
  };
}

/**
 * What the provisioner last found in PostgreSQL for this pair, by name: never the receipt as
 * a whole, which also holds a digest of the stored verifier.
 */
function databaseJson(status: PairStatus): object | null {
  const check = status.database;
  if (!check) return null;
  return {
    finding: check.found,
    since: check.since,
    restored: check.restored ?? null,
    problem: check.problem ?? null,
  };
}

/** The `--json` document (docs/mesh-status.md#--json); a test fixes its shape. */
export function meshStatusJson(
  statuses: readonly PairStatus[],
  selectorText: string,
  nowMs: number,
  maxAgeMs: number | undefined,
  exitCode: number,
  suggester: Suggester = PLAIN_SUGGESTER,
): object {
  const counts = countStates(statuses);
  return {
    selector: selectorText,
    read_at: new Date(nowMs).toISOString(),
    max_age_seconds: maxAgeMs === undefined ? null : Math.round(maxAgeMs / 1000),
    exit_code: exitCode,
    summary: { ...counts, older_than_max_age: statuses.filter((s) => s.tooOld).length },
    pairs: sortWorstFirst(statuses).map((s) => ({
      provider: s.pair.provider,
      consumer: s.pair.consumer,
      role: s.pair.role,
      ...loginsJson(s),
      provider_machine: s.pair.providerMachine,
      consumer_machine: s.pair.consumerMachine,
      state: s.state,
      detail: s.detail,
      last_rotated: s.lastRotated ? new Date(s.lastRotated.atMs).toISOString() : null,
      last_rotated_source: s.lastRotated?.source ?? null,
      age_seconds: s.ageMs === undefined ? null : Math.floor(s.ageMs / 1000),
      older_than_max_age: s.tooOld,
      last_rotation: s.lastRotation ? { id: s.lastRotation.id, outcome: s.lastRotation.outcome } : null,
      resume_id: s.resumeId ?? null,
      unreadable: s.unreadable.map((u) => ({ machine: u.machine, reason: u.reason })),
      database: databaseJson(s),
      app: appJson(s),
      confirmed: s.confirmed ? confirmedJson(s.confirmed) : null,
      armed_revoke: s.armedRevoke
        ? {
            login: s.armedRevoke.login,
            end_sessions: s.armedRevoke.endSessions,
            open_sessions: s.app?.leftOpen?.login === s.armedRevoke.login ? s.app.leftOpen.open : null,
          }
        : null,
      not_revoked: s.revokeNotDone
        ? {
            login: s.revokeNotDone.login,
            fresh_password_staged: s.revokeNotDone.staged,
            end_sessions: s.revokeNotDone.endSessions,
          }
        : null,
      next: nextStep(s, suggester) ?? null,
      // The same commands as objects, for a script that runs one: `next` stays the sentence.
      next_steps: saidSteps(suggester, pairNext(s) ?? []),
    })),
  };
}
