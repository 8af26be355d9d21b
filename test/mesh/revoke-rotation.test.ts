/**
 * `mesh rotate --revoke-previous [--end-sessions]`: the revoke runs after the consumer-commit
 * phase only when every consumer end was committed; the preview, the summary, the journal and
 * the exit code say what happened. The refusals of the flags change nothing on disk.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationDeps } from '../../src/app/rotation-run-effect.js';
import { formatConsumerConninfo } from '../../src/mesh/alternating.js';
import { exitCodeOf } from '../../src/errors.js';
import type { MeshFlags } from '../../src/commands/mesh-flags.js';
import { runMeshRotate } from '../../src/commands/rotation-cli.js';
import { JOURNAL_FILE, type JournalRecord } from '../../src/mesh/journal.js';
import { digestPrefix, secretDigest } from '../../src/mesh/digest.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { capturingContext } from '../helpers/cli-context.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { asAlternating, leftPaths, loginProvisionerOn } from './alternating-plan.js';
import { fakeMesh } from './fake-transport.js';
import { meshInventory, writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter } from './receipt-writer.js';

const SESSION = {
  pid: 77,
  application_name: 'web1',
  client_addr: null,
  backend_start: '2026-12-01T17:00:00Z',
};
const temps: { cleanup: () => void }[] = [];
afterEach(() => temps.splice(0).forEach((t) => t.cleanup()));

function temp(): string {
  const t = makeTempDir('baton-revoke-');
  temps.push(t);
  return t.dir;
}

const inventory = meshInventory(1);

/** pg-main's two pairs (web1-app, backup) alternating, their consumers live on login a. */
function rotation(
  options: { applies?: (file: string) => boolean; endSessions?: boolean; waitMs?: number } = {},
) {
  const plan = asAlternating(inventory, planRotation(inventory, { by: 'provider', name: 'pg-main' }), 'a');
  const fake = fakeMesh(['db1', 'db2', 'web1'], plan, leftPaths(plan));
  const db1 = fake.machines.db1!;
  for (const p of plan.pairs) {
    db1.files.set(p.login!.left!.providerPath, 'old-password');
    fake.machines[p.consumerMachine]!.files.set(
      p.consumerPath,
      formatConsumerConninfo(p.login!.left!.role, 'old-password'),
    );
  }
  loginProvisionerOn(db1, [SESSION], options.applies);
  const journalDir = temp();
  const deps: RotationDeps = {
    transportFor: fake.transportFor,
    journalDir,
    operator: 'test',
    resolve: { concurrency: 4 },
    concurrency: 4,
    waitMs: options.waitMs ?? 1_000,
    pollMs: 5,
    revoke: { endSessions: options.endSessions ?? false },
  };
  const lines: string[] = [];
  const run = (stop?: AbortController) =>
    runRotationPlain({
      id: 'r-test',
      plan,
      deps: stop ? { ...deps, stop } : deps,
      yes: true,
      write: (line) => lines.push(line),
    });
  const journal = () =>
    readFileSync(path.join(journalDir, JOURNAL_FILE), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as JournalRecord);
  return { plan, fake, db1, run, lines, journal };
}

const leftFile = (plan: RotationPlan, i: number) => plan.pairs[i]!.login!.left!.providerPath;

describe('mesh rotate --revoke-previous', () => {
  it('revokes each left login once every consumer end is committed: preview, summary, journal', async () => {
    const { plan, db1, run, lines, journal } = rotation();
    const { code, outcome } = await run();
    expect(outcome).toBe('rotated');
    expect(code).toBe(0);
    const text = lines.join('\n');
    expect(text).toContain(
      '  revoke pg-main:web1-app: once every consumer end is committed, web1_app_a (the login web1-app leaves) gets a fresh password delivered nowhere; its open sessions are named, not ended (--end-sessions ends them).',
    );
    expect(text).toContain(
      '  ✓ revoked web1_app_a (pg-main:web1-app): its provisioner applied a fresh password delivered nowhere; its old password is refused.',
    );
    expect(text).toContain('moved to it (no window: web1_app_a, which it left, is revoked (below))');
    expect(text).not.toContain('web1_app_a, which it left, keeps working');
    expect(text).toContain(
      '      open sessions of web1_app_a (not ended; --end-sessions ends them): pid 77 "web1" (local socket) since 2026-12-01T17:00:00Z.',
    );
    // The preview comes before anything is written, the revoke after the rotation's summary.
    expect(text.indexOf('revoke pg-main:web1-app')).toBeLessThan(text.indexOf('prepared'));
    for (const i of [0, 1]) {
      const fresh = db1.files.get(leftFile(plan, i))!;
      expect(fresh).not.toBe('old-password');
      expect(text).not.toContain(fresh);
      expect(JSON.stringify(journal())).not.toContain(fresh);
    }
    const applied = journal().find((r) => r.phase === 'applied')!;
    expect(applied.pairs.map((p) => [p.key, p.revoked])).toEqual([
      ['pg-main:web1-app', true],
      ['pg-main:backup', true],
    ]);
    // Before anything of the revoke was staged, the journal named each target: the fresh secret
    // that then went live (so a baton killed during the revoke leaves what status can read).
    expect(journal().map((r) => r.phase)).toEqual([
      'resolved',
      'prepared',
      'committed',
      'revoking',
      'applied',
    ]);
    const revoking = journal().find((r) => r.phase === 'revoking')!;
    expect(revoking.applied).toEqual(['pg-main:web1-app', 'pg-main:backup']);
    // What the rotation confirmed (its test logins, its reloads) is said by the revoking record too.
    expect(revoking.confirmed).toEqual(applied.confirmed);
    expect(revoking.pairs.map((p) => p.revoke_target)).toEqual(
      [0, 1].map((i) => digestPrefix(secretDigest(db1.files.get(leftFile(plan, i))!))),
    );
  });

  it('--end-sessions: the summary says how many sessions of the left login were ended', async () => {
    const { run, lines } = rotation({ endSessions: true });
    expect((await run()).code).toBe(0);
    expect(lines.join('\n')).toContain('its open sessions are named and ended.');
    expect(lines.join('\n')).toContain('      ended 1 open session(s) of web1_app_a.');
  });

  it('a rotation that is rolled back revokes nothing, and says so', async () => {
    // The provisioner never applies backup's new login: that pair is rolled back.
    const { plan, db1, run, lines, journal } = rotation({
      applies: (file) => !file.endsWith('/backup+b'),
      waitMs: 200,
    });
    const { outcome } = await run();
    expect(outcome).toBe('taken-back');
    expect(lines.join('\n')).toContain(
      "Nothing was revoked: the rotation did not commit every consumer end, so each consumer's previous login keeps its password.",
    );
    for (const i of [0, 1]) expect(db1.files.get(leftFile(plan, i))).toBe('old-password');
    expect(
      journal()
        .flatMap((r) => r.pairs)
        .some((p) => p.revoked),
    ).toBe(false);
  });

  it('a revoke its provisioner does not confirm: exit 3, the old password may still work, and the next step', async () => {
    // The rotation itself finishes; only the left logins' fresh passwords are never applied.
    const { run, lines, journal } = rotation({ applies: (file) => file.endsWith('+b'), waitMs: 200 });
    const { code, outcome } = await run();
    expect(outcome).toBe('revoke-unconfirmed');
    expect(code).toBe(3);
    const text = lines.join('\n');
    expect(text).toContain(
      "  ! NOT revoked web1_app_a (pg-main:web1-app): pg-main's provisioner did not confirm web1_app_a's fresh password within 200 ms: the old password of web1_app_a MAY STILL WORK.",
    );
    expect(text).toContain(
      "Next: once pg-main's provisioner applies again, rotate the pair once more with --revoke-previous, which gives both logins fresh passwords: baton mesh rotate --pair pg-main:web1-app --revoke-previous",
    );
    expect(
      journal()
        .flatMap((r) => r.pairs)
        .some((p) => p.revoked),
    ).toBe(false);
  });
});

describe('an --end-sessions revoke armed but not yet applied', () => {
  it('says the request stays armed and that the sessions are ended when the provisioner applies it', async () => {
    const { run, lines } = rotation({
      endSessions: true,
      applies: (file) => file.endsWith('+b'),
      waitMs: 200,
    });
    const { code, outcome } = await run();
    expect([code, outcome]).toEqual([3, 'revoke-unconfirmed']);
    const text = lines.join('\n');
    expect(text).toContain('  ! NOT revoked web1_app_a (pg-main:web1-app)');
    expect(text).toMatch(
      /The request stays ARMED: the fresh password \(\S+\) is live beside web1_app_a's provider end, and when its provisioner next applies it, web1_app_a's old password is refused and its open sessions are ENDED \(--end-sessions\); until then the old password may still work\./,
    );
  });

  it('without --end-sessions the armed line says nothing of sessions', async () => {
    const { run, lines } = rotation({ applies: (file) => file.endsWith('+b'), waitMs: 200 });
    await run();
    const text = lines.join('\n');
    expect(text).toContain('The request stays ARMED');
    expect(text).not.toContain('ENDED');
  });
});

describe('mesh rotate --revoke-previous / --end-sessions refused', () => {
  const context = (dir: string) => capturingContext(path.join(dir, 'state'));

  async function refused(
    extra: Partial<MeshFlags>,
    alternating = false,
  ): Promise<{ code: number; message: string }> {
    const dir = temp();
    const file = writeLocalMesh(dir);
    if (alternating)
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace('kind: postgres }', 'kind: postgres, credential: alternating }'),
      );
    const before = snapshotDir(dir);
    const { ctx } = context(dir);
    let result: { code: number; message: string };
    try {
      result = {
        code: await runMeshRotate(ctx, {
          inventory: file,
          concurrency: '2',
          timeout: '2',
          wait: '1',
          yes: true,
          provider: 'pg-main',
          ...extra,
        }),
        message: '',
      };
    } catch (error) {
      result = { code: exitCodeOf(error), message: (error as Error).message };
    }
    // Nothing changed: no journal, no lock, no file on any machine.
    expect(snapshotDir(dir)).toEqual(before);
    return result;
  }

  it('--end-sessions without --revoke-previous: exit 2, nothing changed', async () => {
    const { code, message } = await refused({ endSessions: true }, true);
    expect(code).toBe(2);
    expect(message).toContain(
      '--end-sessions ends the open sessions of the login a rotation revokes, and is only meaningful with --revoke-previous.',
    );
    expect(message).toContain('Nothing was generated and nothing was sent.');
  });

  it('a selection with no alternating pair: exit 2, naming why and the inventory, nothing changed', async () => {
    for (const extra of [{ revokePrevious: true }, { revokePrevious: true, endSessions: true }]) {
      const { code, message } = await refused(extra);
      expect(code).toBe(2);
      expect(message).toContain(
        '--revoke-previous revokes the login an alternating pair\'s consumer leaves, and none of the 2 pair(s) of --provider pg-main is "credential: alternating"',
      );
      expect(message).toMatch(/mesh\.yaml/);
      expect(message).toContain('Nothing was generated and nothing was sent.');
    }
  });
});

describe('mesh rotate --revoke-previous stopped', () => {
  it('stopped once every consumer end is committed: no revoke starts, and the summary says why', async () => {
    const { plan, db1, run, lines, fake } = rotation();
    // The stop arrives as the last consumer end is renamed: the revoke must not begin.
    const web1 = fake.machines.web1!;
    const stop = new AbortController();
    web1.afterCommit = () => stop.abort(new Error('interrupted by SIGINT'));
    const { outcome } = await run(stop);
    expect(outcome).toBe('rotated');
    expect(lines.join('\n')).toContain(
      "Nothing was revoked: the rotation was stopped before the revoke began, so each consumer's previous login keeps its password.",
    );
    for (const i of [0, 1]) expect(db1.files.get(leftFile(plan, i))).toBe('old-password');
  });
});

describe('mesh rotate --revoke-previous from the command line', () => {
  it('an alternating selection passes the refusals; a pair whose consumer was on no login yet has nothing to revoke, and the summary says so', async () => {
    const dir = temp();
    const file = writeLocalMesh(dir, { webs: 1 });
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('kind: postgres }', 'kind: postgres, credential: alternating }'),
    );
    const writer = startReceiptWriter(
      path.join(dir, 'machines', 'db1', 'var/lib/baton/mesh/provides/pg-main'),
    );
    const { ctx, output } = capturingContext(path.join(dir, 'state'));
    try {
      const code = await runMeshRotate(ctx, {
        inventory: file,
        concurrency: '2',
        timeout: '5',
        wait: '5',
        yes: true,
        pair: 'pg-main:web1-app',
        revokePrevious: true,
        endSessions: true,
      });
      expect(output()).toContain('  revoke pg-main:web1-app: once every consumer end is committed,');
      expect(output()).toContain('its open sessions are named and ended.');
      expect(output()).toContain(
        'Nothing was revoked: no pair of the rotation had a previous login to revoke.',
      );
      expect(code).toBe(0);
    } finally {
      writer.stop();
    }
  });
});
