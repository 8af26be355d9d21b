/**
 * `mesh resume` killed at the steps its move onto the rotation's machine reordered (issue 43),
 * against a REAL PostgreSQL with the real provisioner (`baton provision postgres --watch`) and an
 * app on each consumer that re-reads its file for every connection (password-app.ts).
 *
 * The sequence `mesh resume` was wrote its `committing` intents before opening its receipt
 * wait, then its `resumed` record, then the pairs' `finished` intents, then dropped the kept
 * files; on the rotation's machine the wait's connections open before the `committing`
 * intents, `finish-apply` writes the `finished` intents (and revokes) BEFORE the record, and
 * the kept files go after it (src/app/rotation-flow.ts resumeDone). So baton is killed
 * (dying-baton.ts interruptedAt) right after those intents, between the `finished` intents and
 * the record, and between the record and the kept files; then status is read (it must say what
 * the machines hold, changing nothing), followed as printed to exit 0, and each app must log in
 * with what was delivered: 0 refused logins after the end, the journal saying both pairs
 * applied (its last word `resumed`) or, killed before that record, status taking the machines'
 * `finished` with the pairs' age from this rotation. Run `npm run build` first.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { resumeRotation } from '../../src/operations/resume.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { loginsMore, startPasswordApp, type PasswordApp } from '../helpers/password-app.js';
import { canLogin } from '../helpers/postgres.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { runBaton } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { interruptedAt, recordsAt, type CallPoint } from './dying-baton.js';
import { followStatus } from './follow-status.js';

const ID = 'rot-pg-cut';
const WEBS = ['web1', 'web2'] as const;
const PAIRS = WEBS.map((m) => `pg-main:${m}-app`);

const suite = usePostgresMesh({ prefix: 'baton-resume-pg-' });
const mesh = () => suite.mesh;
const consumerEnd = (m: string) => mesh().consumerFile(m, `${m}_app`);
const providerEnd = (m: string) => mesh().providerFile(`${m}_app`);
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);
/** The built CLI with exactly these args (a suggestion's start with its global flags). */
const batonArgs = (args: readonly string[]) =>
  runBaton(args, { cwd: mesh().dir, env: { NO_COLOR: '1' }, timeoutMs: 60_000 });
const statusArgs = () => [
  '--state-dir',
  mesh().stateDir,
  'mesh',
  'status',
  '--json',
  '--inventory',
  mesh().inventory,
];

/** The pairs' own files (ends, staged, kept, records), not what the running provisioner writes beside them. */
const pairFiles = () =>
  Object.fromEntries(
    Object.entries(snapshotDir(path.join(mesh().dir, 'machines'))).filter(
      ([rel]) =>
        /\/(provides|consumes)\/pg-main\/[^/]+$/.test(rel) &&
        !/\/\.(baton\.lock\.holder|heartbeat)$/.test(rel),
    ),
  );

/** The consumer holds what its provider holds, nothing of the pair staged. */
const whole = (m: string) =>
  read(consumerEnd(m)) === read(providerEnd(m)) &&
  !existsSync(`${consumerEnd(m)}.next`) &&
  !existsSync(`${providerEnd(m)}.next`);

/**
 * The steps the move onto the rotation's machine reordered, in resume's order; `unrecorded`:
 * killed before its record, the journal's last word stays `prepared` and status takes the
 * machines' `finished` (withMachineTruth), with the pairs' age from their `finished` intents.
 */
const STEPS: readonly { readonly step: string; readonly at: CallPoint; readonly journal?: 'unrecorded' }[] = [
  {
    step: 'after its committing intents (the wait already open)',
    at: { method: 'writeRecords', matches: recordsAt('committing'), when: 'after' },
  },
  {
    step: 'after its finished intents, before its record',
    at: { method: 'writeRecords', matches: recordsAt('finished'), when: 'after' },
    journal: 'unrecorded',
  },
  { step: 'after its record, before the kept files go', at: { method: 'discardPrevious', when: 'before' } },
];

describe('mesh resume killed at its reordered steps, against PostgreSQL', () => {
  it.each(STEPS)(
    'killed $step: status says what the machines hold, followed as printed it ends at exit 0, and every app logs in with what was delivered',
    async ({ at, journal }) => {
      const provisioner = mesh().startProvisioner(0.1);
      // Both pairs delivered once: each app has a password the database takes.
      const first = await mesh().baton(
        'mesh',
        'rotate',
        '--pair',
        PAIRS[0]!,
        '--pair',
        PAIRS[1]!,
        '--inventory',
        mesh().inventory,
        '--yes',
        '--wait',
        '20',
      );
      expect(first.exitCode, first.all).toBe(0);
      const apps: PasswordApp[] = WEBS.map((m) =>
        startPasswordApp(suite.sandbox, () => consumerEnd(m), `${m}_app`),
      );
      try {
        await Promise.all(apps.map((a) => loginsMore(a, 3)));
        expect(apps.flatMap((a) => a.failures())).toEqual([]);
        const inv = loadInventory(mesh().inventory);
        const plan = planRotation(inv, {
          by: 'union',
          of: WEBS.map((m) => ({ by: 'pair' as const, provider: 'pg-main', consumer: `${m}-app` })),
        });
        const cutAt = new Date().toISOString();
        // The rotation killed once its providers said `committing`: both ends of each pair staged.
        const cut = interruptedAt(
          transportsFor(inv.machines, TEST_BOUNDS),
          { method: 'writeRecords', matches: recordsAt('committing'), when: 'after' },
          'killed',
        );
        const deps = {
          journalDir: mesh().stateDir,
          operator: 't',
          concurrency: 2,
          waitMs: 30_000,
          pollMs: 10,
          mesh: meshIdentity(inv),
        };
        void runRotationPlain({
          id: ID,
          plan,
          yes: true,
          write: () => undefined,
          deps: { ...deps, transportFor: cut.transportFor, resolve: { concurrency: 2 } },
        });
        await cut.dead;
        for (const m of WEBS) expect(read(`${consumerEnd(m)}.next`)).toBeDefined();
        // Its resume, killed at the step.
        const dying = interruptedAt(transportsFor(inv.machines, TEST_BOUNDS), at, 'killed');
        const how = await Promise.race([
          dying.dead.then(() => 'killed'),
          resumeRotation({
            ...deps,
            id: ID,
            records: await readJournal(mesh().stateDir, ID),
            inventory: inv,
            transportFor: dying.transportFor,
          }).then(
            (end) => `ended ${end.step}`,
            (e: unknown) => `threw ${String(e)}`,
          ),
        ]);
        expect(how).toBe('killed');
        // A rename another machine was already doing when baton died lands.
        await new Promise((r) => setTimeout(r, 200));

        // Status says what the machines hold, and changes nothing.
        const before = pairFiles();
        const status = await batonArgs(statusArgs());
        const doc = JSON.parse(status.stdout) as {
          pairs: {
            consumer: string;
            state: string;
            resume_id: string | null;
            next_steps: { args: string[] }[];
          }[];
        };
        for (const m of WEBS) {
          const pair = doc.pairs.find((p) => p.consumer === `${m}-app`)!;
          if (whole(m)) expect([m, pair.state, pair.next_steps]).toEqual([m, 'applied', []]);
          else
            expect([
              m,
              pair.resume_id,
              pair.next_steps.some((s) => s.args.join(' ').includes(`mesh resume ${ID}`)),
            ]).toEqual([m, ID, true]);
        }
        expect(pairFiles()).toEqual(before);

        const ran = await followStatus({ baton: batonArgs, statusArgs: statusArgs() });
        for (const r of ran) expect(r).toMatch(new RegExp(`mesh resume ${ID} → 0$|wait\\)$`));
        const end = Date.now();
        for (const m of WEBS) expect(whole(m), m).toBe(true);
        expect(
          (readdirSync(path.join(mesh().dir, 'machines'), { recursive: true }) as string[]).filter((f) =>
            f.endsWith('.next'),
          ),
        ).toEqual([]);
        // Every app logs in with what was delivered, from the end on.
        await Promise.all(apps.map((a) => loginsMore(a, 10)));
        const after = apps.flatMap((a) => a.attempts.filter((x) => x.at >= end && !x.ok));
        expect(after).toEqual([]);
        for (const m of WEBS)
          expect(await canLogin(suite.sandbox, `${m}_app`, read(consumerEnd(m))!)).toBe(true);
        // The journal and status say so.
        const records = await readJournal(mesh().stateDir, ID);
        if (journal === 'unrecorded') expect(records.map((r) => r.phase)).toEqual(['resolved', 'prepared']);
        else {
          expect(new Set(records.flatMap((r) => r.applied ?? []))).toEqual(new Set(PAIRS));
          expect(records.at(-1)!.phase).toBe('resumed');
        }
        const last = await batonArgs(statusArgs());
        expect(last.exitCode, last.stdout).toBe(0);
        const pairs = (
          JSON.parse(last.stdout) as {
            pairs: { consumer: string; state: string; last_rotation: unknown; last_rotated: string }[];
          }
        ).pairs;
        for (const m of WEBS) {
          const pair = pairs.find((p) => p.consumer === `${m}-app`)!;
          expect(pair).toMatchObject({
            state: 'applied',
            last_rotation: { id: ID, outcome: journal === 'unrecorded' ? 'finished' : 'resumed' },
          });
          // Rotated by this rotation, not at the first one's record.
          expect(pair.last_rotated >= cutAt, `${pair.last_rotated} < ${cutAt}`).toBe(true);
        }
        console.log(
          `resume killed ${STEPS.find((s) => s.at === at)!.step}: followed ${ran.join(', ') || 'nothing to do'}; refused logins after the end 0 of ${apps.reduce((n, a) => n + a.attempts.filter((x) => x.at >= end).length, 0)}`,
        );
      } finally {
        await Promise.all(apps.map((a) => a.stop()));
        await provisioner.stop();
      }
    },
    120_000,
  );
});
