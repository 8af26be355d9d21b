/**
 * The checks of web2-app's caching app (src/sandbox/drill-apps.ts): a consumer's FILE moving
 * proves nothing about an app that read it once, so after a rotation the drill reads what the
 * app itself did — its log, one line per login attempt — and what the rotation's journal says
 * its `reload:` did. An alternating pair's app has no window: not one failed login.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { reloadWords, type ReloadOutcome } from '../../mesh/reload.js';
import { shown } from '../../outside-text.js';
import { appFiles, DRILL_CONSUMERS, type DrillApp, type DrillSandbox } from '../../sandbox/drill-layout.js';
import { check, fail, type CheckResult } from '../../app/drill/check.js';
import { consumerLoginOf } from '../../app/drill/consumer-login.js';
import { readConsumerSecrets, readJournalRecords, type Before } from './notebook.js';

/** How long the check waits for the restarted app's first login (its first attempt is at start). */
const FIRST_LOGIN_WAIT_MS = 5_000;

/** One line of the app's log: a start (the login it read) or a login attempt. */
export interface AppLogEntry {
  readonly pid: number;
  readonly at: number;
  readonly user: string;
  readonly event?: 'start';
  readonly ok?: boolean;
  readonly code?: string | null;
}

/** The app's log, line by line; a line that is not an entry (a write cut short) is skipped. */
export function readAppLog(sandbox: DrillSandbox, app: DrillApp): AppLogEntry[] {
  let text: string;
  try {
    text = readFileSync(path.join(sandbox.machineRoot(app.machine), appFiles(app).log), 'utf8');
  } catch {
    return [];
  }
  const out: AppLogEntry[] = [];
  for (const line of text.split('\n')) {
    try {
      const entry = JSON.parse(line) as Partial<AppLogEntry>;
      if (typeof entry.pid === 'number' && typeof entry.at === 'number' && typeof entry.user === 'string')
        out.push(entry as AppLogEntry);
    } catch {
      // Not an entry.
    }
  }
  return out;
}

/** What the app did since `from` (ms): its starts, its logins, its failures. */
export function appSince(entries: readonly AppLogEntry[], from: number) {
  const since = entries.filter((e) => e.at >= from);
  return {
    starts: since.filter((e) => e.event === 'start'),
    attempts: since.filter((e) => e.event === undefined),
    failed: since.filter((e) => e.event === undefined && e.ok === false),
  };
}

function failedWords(failed: readonly AppLogEntry[]): string {
  const codes = [...new Set(failed.map((e) => e.code ?? 'no code'))].map((c) => shown(c)).join(', ');
  const logins = [...new Set(failed.map((e) => shown(e.user)))].join(', ');
  return `${failed.length} failed login(s) as ${logins} (${codes})`;
}

/** The reload outcomes the task's rotations recorded for `consumer`, last one last. */
function reloadsSince(sandbox: DrillSandbox, before: Before, consumer: string): ReloadOutcome[] {
  return readJournalRecords(sandbox)
    .slice(before.journalRecords)
    .flatMap((record) => record.reloads ?? [])
    .filter((r) => r.consumer === consumer);
}

/**
 * After a rotation that moved the app's consumer: its reload ran and exited 0, the app it
 * started read the NEW login and logs in with it, and (alternating) no login failed meanwhile.
 */
export async function appRotatedChecks(
  sandbox: DrillSandbox,
  before: Before,
  app: DrillApp,
): Promise<CheckResult[]> {
  const reloads = reloadsSince(sandbox, before, app.consumer);
  const reload = reloads[reloads.length - 1];
  const results: CheckResult[] = [
    reload
      ? check(
          `${app.consumer}'s reload: ran on ${app.machine} once its file changed, and exited 0`,
          reload.result === 'ok',
          shown(reloadWords(reload)),
        )
      : fail(
          `${app.consumer}'s reload: ran on ${app.machine} once its file changed, and exited 0`,
          'the journal records no reload since the task opened',
        ),
  ];
  const secret = readConsumerSecrets(sandbox)[app.role];
  if (!secret) return [...results, fail(`${app.consumer}'s app logs in with its new login`, 'no file')];
  const login = consumerLoginOf(app.role, secret).login;
  const started = await firstLoginAfterStart(sandbox, app, before.at);
  const { start, logins } = started;
  results.push(
    check(
      `${app.consumer}'s app, restarted by its reload:, logs in as ${login} with the new password`,
      start !== undefined && start.user === login && logins.length > 0 && logins.every((e) => e.ok === true),
      start === undefined
        ? 'its log shows no start since the task opened'
        : start.user !== login
          ? `it started on ${shown(start.user)}, its file names ${login}`
          : logins.length === 0
            ? `no login since its restart after ${FIRST_LOGIN_WAIT_MS / 1000} s`
            : `${logins.filter((e) => e.ok === true).length} of ${logins.length} logins since the restart accepted (its log)`,
    ),
  );
  const pair = DRILL_CONSUMERS.find((c) => c.name === app.consumer);
  const { failed, attempts } = appSince(readAppLog(sandbox, app), before.at);
  results.push(
    pair?.credential === 'alternating'
      ? check(
          `${app.consumer}'s app had 0 failed logins through the rotation (alternating: no window)`,
          failed.length === 0,
          failed.length === 0 ? `${attempts.length} logins, none refused (its log)` : failedWords(failed),
        )
      : // One login: new connections fail from the database taking the new password until the
        // restart (the window, plus the restart); the app the reload started must never fail.
        check(
          `${app.consumer}'s app failed only before its restart (the window), never after it`,
          start !== undefined && failed.every((e) => e.pid !== start.pid),
          failed.length === 0
            ? `${attempts.length} logins, none refused (its log)`
            : `${failedWords(failed)}, all by the app that still held the old password`,
        ),
  );
  return results;
}

/** After a task that sent nothing: the app was not restarted and never failed to log in. */
export async function appUntouchedCheck(
  sandbox: DrillSandbox,
  before: Before,
  app: DrillApp,
): Promise<CheckResult> {
  // A short task may end between two of its attempts: wait (bounded) for one to judge.
  const deadline = Date.now() + FIRST_LOGIN_WAIT_MS;
  let seen = appSince(readAppLog(sandbox, app), before.at);
  while (seen.attempts.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    seen = appSince(readAppLog(sandbox, app), before.at);
  }
  const { starts, attempts, failed } = seen;
  return check(
    `${app.consumer}'s app kept logging in, not restarted: nothing was sent to it`,
    starts.length === 0 && failed.length === 0 && attempts.length > 0,
    starts.length > 0
      ? `it was restarted ${starts.length} time(s)`
      : failed.length > 0
        ? failedWords(failed)
        : attempts.length === 0
          ? 'its log shows no login since the task opened'
          : `${attempts.length} logins, none refused (its log)`,
  );
}

/** The newest start since `from` and its logins, waiting a bounded time for the first one. */
async function firstLoginAfterStart(
  sandbox: DrillSandbox,
  app: DrillApp,
  from: number,
): Promise<{ start: AppLogEntry | undefined; logins: AppLogEntry[] }> {
  const deadline = Date.now() + FIRST_LOGIN_WAIT_MS;
  for (;;) {
    const { starts, attempts } = appSince(readAppLog(sandbox, app), from);
    const start = starts[starts.length - 1];
    const logins = start ? attempts.filter((e) => e.pid === start.pid) : [];
    if ((start && logins.length > 0) || Date.now() >= deadline) return { start, logins };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
