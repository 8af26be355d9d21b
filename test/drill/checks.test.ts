/**
 * The drill's checks against a REAL sandbox (s3rver through the S3 adapter, PostgreSQL, the
 * provisioner): they pass only when the step was really performed, and they catch the wrong
 * turns an operator takes — a check that cannot fail would let a rehearsal teach nothing.
 */
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChecks } from '../../src/commands/drill/checks.js';
import { newNotebook, noteBefore } from '../../src/commands/drill/notebook.js';
import { performAction, performScripted } from '../../src/commands/drill/perform.js';
import { rotateScripted, seedPasswords } from '../../src/commands/drill/rotate.js';
import { startSandbox } from '../../src/sandbox/drill-sandbox.js';
import { appFiles, DRILL_APPS, type DrillSandbox } from '../../src/sandbox/drill-layout.js';
import { readConsumerSecrets } from '../../src/commands/drill/notebook.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';
import { consumerLoginOf } from '../../src/app/drill/consumer-login.js';
import { tryLogin } from '../../src/commands/drill/pg-login.js';
import type { Teardown } from '../../src/sandbox/teardown.js';
import type { CheckResult } from '../../src/app/drill/check.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';

let sandbox: DrillSandbox;
let teardown: Teardown;
const notebook = newNotebook();

beforeAll(async () => {
  ({ sandbox, teardown } = await startSandbox({ seed: seedPasswords }));
});

afterAll(async () => {
  const dir = ifSet(sandbox)?.dir;
  const pgRoot = ifSet(sandbox) ? path.dirname(sandbox.postgres.dataDir) : undefined;
  expect(await ifSet(teardown)?.run()).toEqual([]);
  if (dir) expect(existsSync(dir)).toBe(false);
  if (pgRoot) expect(existsSync(pgRoot)).toBe(false);
});

const failed = (results: readonly CheckResult[]) => results.filter((r) => !r.ok).map((r) => r.label);

describe("the drill's checks on a real sandbox", () => {
  it('start with ctl-a holding and having published, ctl-b empty, and every pair logging in', async () => {
    const before = await noteBefore(sandbox, notebook);
    expect(failed(await runChecks(sandbox, before, 1, 0))).toEqual([]);
    expect(failed(await runChecks(sandbox, before, 1, 1))).toEqual([]);
    for (const role of ['web1_app', 'web2_app', 'worker1_jobs'] as const) {
      const { login, password } = consumerLoginOf(role, before.secrets[role]!);
      expect(await tryLogin(sandbox.postgres, login, password)).toEqual({ ok: true });
    }
    // web2-app is alternating: its file names its first login, not the group.
    expect(consumerLoginOf('web2_app', before.secrets.web2_app!).login).toBe('web2_app_a');
  });

  it("reaches its s3rver with the emulator's keys handed over in-process: none in the environment or the store URL", async () => {
    const keys = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].filter(
      (name) => process.env[name] === 'S3RVER',
    );
    expect(keys).toEqual([]);
    expect(sandbox.storeUrl).not.toContain('S3RVER');
    expect((await sandbox.store.get())?.etag).toMatch(/^"/);
  });

  it('step 2 does not pass while ctl-b still holds nothing (the operator left instead of adopting)', async () => {
    const before = await noteBefore(sandbox, notebook);
    const ctlB = snapshotDir(sandbox.stateDir('ctl-b'));
    const results = await runChecks(sandbox, before, 2, 0);
    expect(failed(results)).toContain('ctl-b now holds a whole authority');
    expect(failed(results)).toContain('ctl-b adopted the published authority (fingerprints equal)');
    expect(snapshotDir(sandbox.stateDir('ctl-b'))).toEqual(ctlB);
  });

  it("step 3's force check does not pass when ctl-a was never refused and nothing was set aside", async () => {
    const before = await noteBefore(sandbox, notebook);
    const results = await runChecks(sandbox, before, 3, 2);
    expect(failed(results)).toEqual([
      'ctl-a was REFUSED: left behind by a rotation',
      'the old authority was set aside, not deleted (ca.superseded-*)',
    ]);
  });

  it('steps 2 and 3 pass once performed, then step 4 catches a rotation that touched more than web1-app', async () => {
    for (const step of DRILL_STEPS.filter((s) => s.number === 2 || s.number === 3)) {
      for (const [index, task] of step.tasks.entries()) {
        const before = await noteBefore(sandbox, notebook);
        await performScripted(sandbox, task);
        expect(
          failed(await runChecks(sandbox, before, step.number, index)),
          `step ${step.number} task ${index + 1}`,
        ).toEqual([]);
      }
    }
    const before = await noteBefore(sandbox, notebook);
    // Cancelled at the count: the checks agree that nothing rotated — none says the (old)
    // password that still logs in is the new one.
    const { state: cancelled } = await rotateScripted(
      sandbox,
      { by: 'consumer', name: 'web1-app' },
      () => {},
      async () => undefined,
    );
    expect(cancelled.step).toBe('cancelled');
    const afterCancel = await runChecks(sandbox, before, 4, 0);
    expect(failed(afterCancel)).toEqual([
      'exactly db1 and web1 received files',
      'web1 holds a new password for web1_app',
      'the provisioner on db1 applied web1_app',
      'web1_app logs in with the new password',
      'the old password of web1_app is refused',
      'the rotation of web1-app was applied',
    ]);
    expect(afterCancel.find((r) => r.label === 'web1 holds a new password for web1_app')?.detail).toContain(
      'cancelled',
    );
    // Esc at web2-app's confirm: the checks say what an ALTERNATING pair should have done (moved
    // to its other login), never the single-login "the old password … is refused".
    const { state: cancelledAlternating } = await rotateScripted(
      sandbox,
      { by: 'consumer', name: 'web2-app' },
      () => {},
      () => Promise.resolve(undefined),
    );
    expect(cancelledAlternating.step).toBe('cancelled');
    const alternating = failed(await runChecks(sandbox, before, 4, 1));
    expect(alternating).toHaveLength(8);
    expect(alternating.slice(0, 3)).toEqual([
      'exactly db1 and web2 received files',
      'web2 holds a new password for web2_app',
      'the provisioner on db1 applied web2_app',
    ]);
    expect(alternating[3]).toMatch(/^web2 moved from web2_app_([ab]) to web2_app_(?!\1)[ab]$/);
    expect(alternating[4]).toMatch(/^web2_app_[ab] logs in with the new password$/);
    expect(alternating[5]).toBe('the rotation of web2-app was applied');
    // Its caching app: no reload ran, so nothing restarted it onto a new login.
    expect(alternating[6]).toBe("web2-app's reload: ran on web2 once its file changed, and exited 0");
    expect(alternating[7]).toMatch(
      /^web2-app's app, restarted by its reload:, logs in as web2_app_[ab] with the new password$/,
    );
    expect(alternating.join('\n')).not.toContain('is refused');
    // The wrong selection: every pair of pg-main instead of web1-app alone.
    await rotateScripted(sandbox, { by: 'provider', name: 'pg-main' });
    const results = await runChecks(sandbox, before, 4, 0);
    // web2-app is alternating: it moved too, but the login it left still logs in (no window).
    expect(failed(results)).toEqual([
      'exactly db1 and web1 received files',
      'web2_app was not touched',
      'worker1_jobs was not touched',
      'worker1_jobs still logs in with its password',
    ]);
  });

  it('step 5 catches a gate that was never tried, and proves nothing was sent when it closes', async () => {
    await performAction(sandbox, 'unplug-worker1');
    let before = await noteBefore(sandbox, notebook);
    expect(failed(await runChecks(sandbox, before, 5, 1))).toEqual([
      'the rotation was tried and the gate closed, naming worker1',
    ]);

    before = await noteBefore(sandbox, notebook);
    const { state } = await rotateScripted(sandbox, { by: 'provider', name: 'pg-main' });
    expect(state.step).toBe('gate-closed');
    expect(failed(await runChecks(sandbox, before, 5, 1))).toEqual([]);
  });

  it("step 5's gate check fails when the rotation went through (worker1 was reachable)", async () => {
    await performAction(sandbox, 'plug-worker1');
    const before = await noteBefore(sandbox, notebook);
    await rotateScripted(sandbox, { by: 'provider', name: 'pg-main' }, () => {}, undefined, {
      endSessions: false,
    });
    const results = failed(await runChecks(sandbox, before, 5, 1));
    expect(results).toContain('nothing was sent: every file on every machine is as it was');
    expect(results).toContain('the old password of web1_app still logs in');
    expect(results).toContain('the old password of worker1_jobs still logs in');
    expect(results).toContain("web2-app's app kept logging in, not restarted: nothing was sent to it");
    // …and the same rotation is exactly what the last task of step 5 asks for.
    expect(failed(await runChecks(sandbox, before, 5, 3))).toEqual([]);
  });

  it("step 5's last check fails on a rotation without --revoke-previous: the login web2 left still logs in", async () => {
    const before = await noteBefore(sandbox, notebook);
    await rotateScripted(sandbox, { by: 'provider', name: 'pg-main' });
    const bad = failed(await runChecks(sandbox, before, 5, 3));
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^the login web2 left, web2_app_[ab], is revoked: its old password is refused$/);
  });

  it("the app's checks catch a failed login and an app that started on the login its file left", async () => {
    const before = await noteBefore(sandbox, notebook);
    await rotateScripted(sandbox, { by: 'provider', name: 'pg-main' }, () => {}, undefined, {
      endSessions: false,
    });
    expect(failed(await runChecks(sandbox, before, 5, 3))).toEqual([]);
    // What an app that never took the new login writes: a start on the other login, a refusal.
    const app = DRILL_APPS[0];
    const now = consumerLoginOf(app.role, readConsumerSecrets(sandbox)[app.role]!).login;
    const other = now.endsWith('_a') ? now.replace(/_a$/, '_b') : now.replace(/_b$/, '_a');
    const at = Date.now();
    appendFileSync(
      path.join(sandbox.machineRoot(app.machine), appFiles(app).log),
      `${JSON.stringify({ pid: 1, event: 'start', user: other, at })}\n${JSON.stringify({ pid: 1, user: other, ok: false, code: '28P01', at })}\n`,
    );
    const results = await runChecks(sandbox, before, 5, 3);
    const bad = results.filter((r) => !r.ok);
    expect(bad.map((r) => [r.label, r.detail])).toEqual([
      [
        `web2-app's app, restarted by its reload:, logs in as ${now} with the new password`,
        `it started on ${other}, its file names ${now}`,
      ],
      [
        "web2-app's app had 0 failed logins through the rotation (alternating: no window)",
        `1 failed login(s) as ${other} (28P01)`,
      ],
    ]);
  });
});
