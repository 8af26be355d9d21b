/**
 * The checks after each task. Each reads the real sandbox — the files on each controller,
 * the published document, every machine's delivered files, PostgreSQL logins — and compares
 * with what was noted before the task. The operator moves on only when all of them pass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { checkPair } from '../../authority/index.js';
import { RECEIPTS_DIR, secretDigest, parseReceipt } from '../../mesh/digest.js';
import { look } from '../../share/actions.js';
import type { Look } from '../../share/types.js';
import { localTransport } from '../../transport/local-transport.js';
import { bindTransport } from '../../transport/bound-transport.js';
import { unpluggable } from './unplugged.js';
import { check, fail, type CheckResult } from '../../app/drill/check.js';
import { changedFiles, digestTree, machinesOf, readMeshFiles } from './machine-files.js';
import { readConsumerSecrets, readJournalRecords, type Before, type Role } from './notebook.js';
import { loadInventory } from '../../mesh/inventory.js';
import { planRotation } from '../../mesh/rotation-plan.js';
import type { Selector } from '../../mesh/selector.js';
import { tryLogin } from './pg-login.js';
import { consumerLoginOf, type ConsumerLogin } from '../../app/drill/consumer-login.js';
import { loginRole, otherSlot, slotOfLogin } from '../../mesh/alternating.js';
import {
  DRILL_APPS,
  DRILL_CONSUMERS,
  DRILL_PROVIDER,
  type DrillSandbox,
} from '../../sandbox/drill-layout.js';
import { appRotatedChecks, appUntouchedCheck } from './app-checks.js';
import type { StepNumber } from '../../app/drill/scenario.js';

/** How long the provisioner gets to apply a committed password before the check fails. */
const APPLY_WAIT_MS = 20_000;

export async function runChecks(
  sandbox: DrillSandbox,
  before: Before,
  step: StepNumber,
  task: number,
): Promise<CheckResult[]> {
  try {
    return await checksFor(sandbox, before, step, task);
  } catch (error) {
    return [
      fail('the checks could read the sandbox', error instanceof Error ? error.message : String(error)),
    ];
  }
}

async function checksFor(
  sandbox: DrillSandbox,
  before: Before,
  step: StepNumber,
  task: number,
): Promise<CheckResult[]> {
  const key = `${step}.${task}`;
  switch (key) {
    case '1.0':
    case '1.1':
      return statusChecks(sandbox, before, task === 0 ? 'ctl-a' : 'ctl-b');
    case '2.0':
      return adoptChecks(sandbox, before);
    case '3.0':
      return rotatedChecks(sandbox, before);
    case '3.1':
      return publishedRotationChecks(sandbox, before);
    case '3.2':
      return forcedChecks(sandbox, before);
    case '4.0':
      return [
        planChecks(sandbox, { by: 'consumer', name: 'web1-app' }, ['db1', 'web1']),
        ...(await rotatedPairsChecks(sandbox, before, ['web1_app'])),
        windowCheck(sandbox, before, 'web1-app'),
      ];
    case '4.1':
      return [
        planChecks(sandbox, { by: 'consumer', name: 'web2-app' }, ['db1', 'web2']),
        ...(await rotatedPairsChecks(sandbox, before, ['web2_app'])),
        windowCheck(sandbox, before, 'web2-app'),
        ...(await appsRotatedChecks(sandbox, before, ['web2-app'])),
      ];
    case '5.0':
      return reachabilityChecks(sandbox, false);
    case '5.1':
      return [
        ...(await gateClosedChecks(sandbox, before)),
        ...(await Promise.all(DRILL_APPS.map((app) => appUntouchedCheck(sandbox, before, app)))),
      ];
    case '5.2':
      return reachabilityChecks(sandbox, true);
    case '5.3':
      return [
        ...(await rotatedPairsChecks(
          sandbox,
          before,
          DRILL_CONSUMERS.map((c) => c.role),
          { revokedPrevious: true },
        )),
        ...(await appsRotatedChecks(
          sandbox,
          before,
          DRILL_CONSUMERS.map((c) => c.name),
        )),
      ];
    default:
      return [
        fail(
          `step ${step} has checks for task ${task + 1}`,
          'no checks are defined for it (a bug in the drill)',
        ),
      ];
  }
}

/** The caching apps of the consumers a rotation moved (app-checks.ts). */
async function appsRotatedChecks(
  sandbox: DrillSandbox,
  before: Before,
  consumers: readonly string[],
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const app of DRILL_APPS.filter((a) => consumers.includes(a.consumer)))
    results.push(...(await appRotatedChecks(sandbox, before, app)));
  return results;
}

// --- the authority ----------------------------------------------------------------------

async function statusChecks(
  sandbox: DrillSandbox,
  before: Before,
  controller: 'ctl-a' | 'ctl-b',
): Promise<CheckResult[]> {
  const now = await look(sandbox.share(controller));
  const unchanged = sameTree(before.controllerFiles[controller], digestTree(sandbox.stateDir(controller)));
  const readOnly = check(
    `reading the status changed nothing on ${controller}`,
    unchanged,
    unchanged ? undefined : `files under ${sandbox.stateDir(controller)} changed`,
  );
  if (controller === 'ctl-a') {
    return [
      check('ctl-a holds a whole authority', now.local.state === 'whole', `ctl-a is ${now.local.state}`),
      check(
        'ctl-a has published it: the status says in sync',
        now.verdict.kind === 'in-sync',
        `verdict: ${now.verdict.kind}`,
      ),
      check(
        'the published document was written by ctl-a',
        publishedBy(now) === 'ctl-a',
        `published by ${publishedBy(now) ?? 'nobody'}`,
      ),
      readOnly,
    ];
  }
  return [
    check('ctl-b holds nothing (a fresh host)', now.local.state === 'fresh', `ctl-b is ${now.local.state}`),
    check(
      'the decision table says ctl-b should ADOPT',
      now.verdict.kind === 'adopt',
      `verdict: ${now.verdict.kind}`,
    ),
    readOnly,
  ];
}

async function adoptChecks(sandbox: DrillSandbox, before: Before): Promise<CheckResult[]> {
  const [a, b] = await Promise.all([look(sandbox.share('ctl-a')), look(sandbox.share('ctl-b'))]);
  const fa = fingerprintOf(a);
  const fb = fingerprintOf(b);
  const published = publishedFingerprint(b);
  return [
    check('ctl-b now holds a whole authority', b.local.state === 'whole', `ctl-b is ${b.local.state}`),
    check(
      'ctl-b adopted the published authority (fingerprints equal)',
      fb !== undefined && fb === published,
      `ctl-b ${fb ?? 'none'}, published ${published ?? 'none'}`,
    ),
    check('ctl-a and ctl-b hold the same authority', fa !== undefined && fa === fb, `ctl-a ${fa ?? 'none'}`),
    check(
      'nothing was minted: the published authority is the one ctl-a had',
      published === fingerprintOf(before.looks['ctl-a']),
      `published ${published ?? 'none'}`,
    ),
  ];
}

async function rotatedChecks(sandbox: DrillSandbox, before: Before): Promise<CheckResult[]> {
  const b = await look(sandbox.share('ctl-b'));
  const old = fingerprintOf(before.looks['ctl-b']);
  const current = fingerprintOf(b);
  const previous = b.local.state === 'whole' ? b.local.previous?.fingerprint : undefined;
  return [
    check(
      'ctl-b holds a new authority',
      current !== undefined && current !== old,
      `now ${current ?? 'none'}, before ${old ?? 'none'}`,
    ),
    check(
      'ctl-b keeps the old one as the previous pair (the overlap)',
      previous !== undefined && previous === old,
      `previous ${previous ?? 'none'}`,
    ),
    check(
      'ctl-b is AHEAD of the store: it rotated and has not published',
      b.verdict.kind === 'refuse' && b.verdict.lineage.kind === 'ahead',
      verdictWords(b),
    ),
  ];
}

async function publishedRotationChecks(sandbox: DrillSandbox, before: Before): Promise<CheckResult[]> {
  const b = await look(sandbox.share('ctl-b'));
  const published = b.published.state === 'present' ? b.published.header : undefined;
  const old = publishedFingerprint(before.looks['ctl-b']);
  return [
    check(
      "the store holds ctl-b's new authority",
      published !== undefined && published.fingerprint === fingerprintOf(b),
      `published ${published?.fingerprint ?? 'none'}`,
    ),
    check(
      'the document names the authority it replaced',
      published?.previousFingerprint === old,
      `previous_fingerprint ${published?.previousFingerprint ?? 'none'}`,
    ),
    check('ctl-b is in sync', b.verdict.kind === 'in-sync', verdictWords(b)),
  ];
}

async function forcedChecks(sandbox: DrillSandbox, before: Before): Promise<CheckResult[]> {
  const seen = before.looks['ctl-a'];
  const a = await look(sandbox.share('ctl-a'));
  const oldFingerprint = fingerprintOf(seen);
  const superseded = await supersededFingerprints(sandbox);
  return [
    check(
      'ctl-a was REFUSED: left behind by a rotation',
      seen.verdict.kind === 'refuse' && seen.verdict.lineage.kind === 'left-behind',
      verdictWords(seen),
    ),
    check('ctl-a now holds the published authority', a.verdict.kind === 'in-sync', verdictWords(a)),
    check(
      'the old authority was set aside, not deleted (ca.superseded-*)',
      oldFingerprint !== undefined && superseded.includes(oldFingerprint),
      superseded.length === 0
        ? 'no ca.superseded-* directory holds a readable authority'
        : `set aside: ${superseded.join(', ')}`,
    ),
  ];
}

/** Fingerprints of every authority a force set aside on ctl-a. */
async function supersededFingerprints(sandbox: DrillSandbox): Promise<string[]> {
  const stateDir = sandbox.stateDir('ctl-a');
  const out: string[] = [];
  for (const name of readdirSync(stateDir).filter(
    (n) => n.startsWith('ca.superseded-') && !n.endsWith('.authority-created'),
  )) {
    const dir = path.join(stateDir, name);
    try {
      const pair = await checkPair(
        readFileSync(path.join(dir, 'ca.key')),
        readFileSync(path.join(dir, 'ca.crt')),
        sandbox.deployment,
        dir,
      );
      out.push(pair.fingerprint);
    } catch {
      // Not a readable authority: not the one the check looks for.
    }
  }
  return out;
}

// --- the mesh ---------------------------------------------------------------------------

function reachabilityChecks(sandbox: DrillSandbox, reachable: boolean): Promise<CheckResult[]> {
  // Through the drill's unplug wrapper, as its rotations reach worker1.
  const root = sandbox.machineRoot('worker1');
  const machine = { name: 'worker1', transport: 'local' as const, address: root, meshDir: '/', root };
  return bindTransport(unpluggable(localTransport('worker1', root), machine), { timeoutMs: 5_000 })
    .resolve()
    .then(
      () => [
        check(reachable ? 'worker1 resolves again' : 'worker1 does not resolve', reachable, 'it answered'),
      ],
      (error: unknown) => [
        check(
          reachable ? 'worker1 resolves again' : 'worker1 does not resolve',
          !reachable,
          error instanceof Error ? error.message : String(error),
        ),
      ],
    );
}

/** The preview is a query: the holders the planner lists for a selection, in order. */
function planChecks(sandbox: DrillSandbox, selector: Selector, expected: readonly string[]): CheckResult {
  const holders = planRotation(loadInventory(sandbox.inventoryPath), selector).holders.map((h) => h.machine);
  return check(
    `the preview lists exactly ${expected.join(' and ')}`,
    sameList([...holders].sort(), [...expected].sort()),
    `holders: ${holders.join(', ')}`,
  );
}

async function gateClosedChecks(sandbox: DrillSandbox, before: Before): Promise<CheckResult[]> {
  const changed = changedFiles(before.meshFiles, readMeshFiles(sandbox));
  const closed = readJournalRecords(sandbox)
    .slice(before.journalRecords)
    .filter((record) => record.phase === 'gate-closed');
  const worker1 = closed
    .flatMap((record) => record.results)
    .find((result) => result.machine === 'worker1' && !result.ok);
  const results: CheckResult[] = [
    check(
      'the rotation was tried and the gate closed, naming worker1',
      worker1 !== undefined,
      worker1
        ? `worker1: ${worker1.reason ?? 'unresolved'}`
        : 'the journal has no closed gate since the task opened: try the rotation',
    ),
    check(
      'nothing was sent: every file on every machine is as it was',
      changed.length === 0,
      changed.length ? `changed: ${changed.join(', ')}` : 'no file changed, none staged',
    ),
  ];
  for (const consumer of DRILL_CONSUMERS) {
    const old = before.secrets[consumer.role];
    if (!old) {
      results.push(
        fail(
          `the old password of ${consumer.role} still logs in`,
          `${consumer.machine} had no password to try`,
        ),
      );
      continue;
    }
    const was = consumerLoginOf(consumer.role, old);
    results.push(await logsIn(sandbox, was, `the old password of ${was.login} still logs in`));
  }
  return results;
}

/**
 * After a rotation of `roles`: exactly their holders received files, the provider applied each
 * (its receipt carries the new digest), the new password logs in, the old one is refused,
 * and every other pair is untouched and still logs in.
 */
async function rotatedPairsChecks(
  sandbox: DrillSandbox,
  before: Before,
  roles: readonly Role[],
  options: { readonly revokedPrevious?: boolean } = {},
): Promise<CheckResult[]> {
  const rotated = DRILL_CONSUMERS.filter((c) => roles.includes(c.role));
  const others = DRILL_CONSUMERS.filter((c) => !roles.includes(c.role));
  const expectedMachines = [...new Set(['db1', ...rotated.map((c) => c.machine)])].sort();
  const now = readConsumerSecrets(sandbox);
  const isRenewed = (role: Role) =>
    now[role] !== undefined && now[role].digest !== before.secrets[role]?.digest;
  // The provider-end file each new consumer file depends on: the role's own, or the login's it names.
  const providerFileOf = (role: Role) => consumerLoginOf(role, now[role]!).providerFile;
  // Only a new password has a receipt to wait for: the seeded receipts already match the old
  // files, and waiting on them would pass "applied" for a rotation that never happened.
  const appliedFiles = await waitForReceipts(sandbox, roles.filter(isRenewed).map(providerFileOf));
  const applied = roles.filter((role) => isRenewed(role) && appliedFiles.includes(providerFileOf(role)));
  const changed = changedFiles(before.meshFiles, readMeshFiles(sandbox));
  const touched = machinesOf(changed);
  const results: CheckResult[] = [
    check(
      `exactly ${expectedMachines.join(' and ')} received files`,
      sameList(touched, expectedMachines),
      `changed on: ${touched.join(', ') || 'nothing'}`,
    ),
  ];
  // A rotation cancelled at the confirm (or never run) left every password as it was: the
  // checks must say so, not log in with the OLD password and call it the new one.
  const cancelled = readJournalRecords(sandbox)
    .slice(before.journalRecords)
    .some((record) => record.phase === 'cancelled');
  const unchanged = cancelled
    ? 'the rotation was cancelled at the confirm: nothing was generated'
    : 'it is still the password it had before the task';
  for (const consumer of rotated) {
    const old = before.secrets[consumer.role];
    const fresh = now[consumer.role];
    const renewed = isRenewed(consumer.role);
    results.push(
      check(
        `${consumer.machine} holds a new password for ${consumer.role}`,
        renewed,
        !fresh ? 'no file' : renewed ? `digest ${fresh.digest.slice(0, 19)}` : unchanged,
      ),
    );
    const appliedWhy = applied.includes(consumer.role)
      ? 'its receipt carries the new digest'
      : renewed
        ? `no matching receipt after ${APPLY_WAIT_MS / 1000} s`
        : 'there is no new password to apply';
    results.push(
      check(`the provisioner on db1 applied ${consumer.role}`, applied.includes(consumer.role), appliedWhy),
    );
    const is = fresh && consumerLoginOf(consumer.role, fresh);
    const was = old && consumerLoginOf(consumer.role, old);
    // The pair's credential mode comes from the inventory, not from what the files hold: a
    // rotation that did not happen must still be judged by what it should have done.
    if (consumer.credential === 'alternating')
      results.push(
        ...(await alternatingChecks(
          sandbox,
          consumer.machine,
          consumer.role,
          was,
          renewed ? is : undefined,
          unchanged,
          options,
        )),
      );
    else results.push(...(await singleChecks(sandbox, consumer.role, was, renewed ? is : undefined)));
  }
  for (const consumer of others) {
    const old = before.secrets[consumer.role];
    const fresh = now[consumer.role];
    results.push(
      check(
        `${consumer.role} was not touched`,
        old !== undefined && fresh?.digest === old.digest,
        'its delivered file is the same',
      ),
    );
    if (old) {
      const was = consumerLoginOf(consumer.role, old);
      results.push(await logsIn(sandbox, was, `${was.login} still logs in with its password`));
    }
  }
  return results;
}

/** `name` holds when PostgreSQL accepts `as`'s password: the check of a login that must work. */
async function logsIn(sandbox: DrillSandbox, as: ConsumerLogin, name: string): Promise<CheckResult> {
  const login = await tryLogin(sandbox.postgres, as.login, as.password);
  return check(name, login.ok, login.ok ? 'PostgreSQL accepted it' : login.reason);
}

/** A one-login pair after its rotation: the new password logs in, the old one is refused. */
async function singleChecks(
  sandbox: DrillSandbox,
  role: Role,
  was: ConsumerLogin | undefined,
  now: ConsumerLogin | undefined,
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  if (!now) results.push(fail(`${role} logs in with the new password`, 'there is no new password to try'));
  else {
    results.push(await logsIn(sandbox, now, `${now.login} logs in with the new password`));
  }
  if (was) {
    const login = await tryLogin(sandbox.postgres, was.login, was.password);
    results.push(
      check(
        `the old password of ${was.login} is refused`,
        !login.ok && login.refused,
        login.ok ? 'PostgreSQL still accepts it' : login.reason,
      ),
    );
  }
  return results;
}

/**
 * An alternating pair after its rotation: the consumer moved to its other login, which logs in
 * with the new password, and the login it left still logs in (no window) or, with
 * `--revoke-previous`, is refused. Said in those words even when the rotation did not happen.
 */
async function alternatingChecks(
  sandbox: DrillSandbox,
  machine: string,
  role: Role,
  was: ConsumerLogin | undefined,
  now: ConsumerLogin | undefined,
  unchanged: string,
  options: { readonly revokedPrevious?: boolean },
): Promise<CheckResult[]> {
  const fromSlot = was?.alternating ? slotOfLogin(role, was.login) : undefined;
  const other = fromSlot ? loginRole(role, otherSlot(fromSlot)) : 'its other login';
  const results: CheckResult[] = [
    check(
      `${machine} moved from ${was?.login ?? 'its login'} to ${other}`,
      now !== undefined && now.alternating && now.login !== was?.login,
      now ? `now ${now.login}` : unchanged,
    ),
  ];
  if (!now) results.push(fail(`${other} logs in with the new password`, 'there is no new password to try'));
  else {
    results.push(await logsIn(sandbox, now, `${now.login} logs in with the new password`));
  }
  if (!was) return results;
  const login = await tryLogin(sandbox.postgres, was.login, was.password);
  results.push(
    options.revokedPrevious
      ? // --revoke-previous: the login it left got a password never delivered.
        check(
          `the login ${machine} left, ${was.login}, is revoked: its old password is refused`,
          now !== undefined && !login.ok && login.refused,
          login.ok ? 'PostgreSQL still accepts it' : login.reason,
        )
      : // No window: the login the consumer left keeps its password until the next rotation.
        check(
          `the login ${machine} left, ${was.login}, still logs in with its password (no window)`,
          login.ok,
          login.ok ? 'PostgreSQL accepted it' : login.reason,
        ),
  );
  return results;
}

/**
 * What the task's rotation recorded about a pair's window, from the journal: a one-role pair's
 * measured window (the summary showed it); an alternating pair's move from one login to the
 * other, which has none (the login it left kept its password meanwhile).
 */
function windowCheck(sandbox: DrillSandbox, before: Before, consumer: string): CheckResult {
  const key = `${DRILL_PROVIDER}:${consumer}`;
  const applied = readJournalRecords(sandbox)
    .slice(before.journalRecords)
    .filter((record) => record.phase === 'applied' && (record.applied ?? []).includes(key));
  if (applied.length === 0)
    return fail(
      `the rotation of ${consumer} was applied`,
      'the journal has no applied rotation of it since the task opened',
    );
  const pair = applied[0]!.pairs.find((p) => p.key === key);
  if (pair?.credential === 'alternating') {
    return check(
      `${consumer} had no window: it moved from ${pair.left ?? 'no login'} to ${pair.login ?? '?'}, and ${pair.left ?? 'the login it left'} kept its password`,
      pair.login !== undefined && pair.login !== pair.left,
      'from the journal (credential: alternating)',
    );
  }
  const ms = applied[0]!.windows_ms?.[key];
  return check(
    `${consumer}'s window was measured: ${ms === undefined ? '?' : Math.round(ms)} ms when new connections with the OLD password could fail`,
    ms !== undefined,
    ms === undefined ? 'the journal records no window' : 'from the journal, as the summary printed it',
  );
}

/** The provider-end files (a role's, or a login's) whose receipt digest equals the delivered file's, after waiting a bounded time. */
export async function waitForReceipts(
  sandbox: DrillSandbox,
  roles: readonly string[],
  waitMs = APPLY_WAIT_MS,
): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const applied = roles.filter((role) => {
      try {
        const delivered = secretDigest(
          readFileSync(sandbox.meshPath('db1', 'provides', DRILL_PROVIDER, role)),
        );
        const receipt = parseReceipt(
          readFileSync(sandbox.meshPath('db1', 'provides', DRILL_PROVIDER, RECEIPTS_DIR, role), 'utf8'),
        );
        return receipt?.digest === delivered;
      } catch {
        return false;
      }
    });
    if (applied.length === roles.length || Date.now() >= deadline) return applied;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// --- small words ------------------------------------------------------------------------

function fingerprintOf(seen: Look): string | undefined {
  return seen.local.state === 'whole' ? seen.local.current.fingerprint : undefined;
}

function publishedFingerprint(seen: Look): string | undefined {
  return seen.published.state === 'present' ? seen.published.header.fingerprint : undefined;
}

function publishedBy(seen: Look): string | undefined {
  return seen.published.state === 'present' ? seen.published.header.publishedBy.raw : undefined;
}

function verdictWords(seen: Look): string {
  return seen.verdict.kind === 'refuse' ? `refuse (${seen.verdict.lineage.kind})` : seen.verdict.kind;
}

function sameTree(a: Record<string, string>, b: Record<string, string>): boolean {
  return changedFiles(a, b).length === 0;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
