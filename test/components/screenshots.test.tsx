/**
 * The pictures in screenshots/ are what the code prints: `npm run screenshots` writes each
 * frame's plain text beside its SVG, and this renders the same states in-process at the same
 * size and compares. Values a real run makes up (times, ids, the rotation's id) are replaced
 * by their kind on both sides; everything else — words, layout, folding — must match, so a
 * change to a view fails here until the screenshots are regenerated.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ColorContext } from '../../components/color-context.js';
import { DrillScreen } from '../../components/drill/DrillScreen.js';
import { RotationApp } from '../../components/rotation/RotationApp.js';
import {
  drillFlow,
  initialDrillState,
  type DrillEvent,
  type DrillState,
} from '../../src/app/drill/drill-flow.js';
import { rotationFlow, startRotation } from '../../src/app/rotation-flow.js';
import { rotationRunner } from '../../src/app/rotation-run-effect.js';
import { openCommandTransports } from '../../src/commands/command-transports.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { inspectPlan } from '../../src/mesh/leftovers.js';
import { findMachine } from '../../src/mesh/inventory.js';
import { shotHosts } from '../../scripts/screenshot-hosts.js';
import { REPO } from '../helpers/bundle-script.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';
import { passEveryTask } from '../helpers/drill-walk.js';
import { BIN, assertBuilt } from '../helpers/run-baton.js';
import { FailoverApp } from '../../components/FailoverApp.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { appHooks } from '../../src/mesh/reload.js';
import { systemClock } from '../../src/authority/clock.js';
import { StatusApp } from '../../components/StatusApp.js';
import { readStatus } from '../../src/app/status-report.js';
import { statusSources } from '../../src/app/status-sources.js';
import { openStore } from '../../src/store/open-store.js';
import { MeshStatusApp } from '../../components/mesh-status/MeshStatusApp.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { readJournalHistory } from '../../src/mesh/journal-history.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { readMeshStatus } from '../../src/mesh/read-mesh-status.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KEY, renderAt, type Rendered } from './render-at.js';

const SHOTS = path.join(REPO, 'screenshots');
const mounted: Rendered[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const view of mounted.splice(0)) view.unmount();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A frame as the pane shows it: no escapes, no trailing spaces, no empty lines at the end; made-up values by kind. */
function normalised(frame: string): string {
  const lines = frame
    .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
    .split('\n')
    .map((line) => line.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return (
    lines
      .join('\n')
      .replace(/\d{8}T\d{6}Z-[0-9a-f]{6}/g, '<rotation id>')
      .replace(/\d{8}T\d+…/g, '<rotation id>…')
      .replace(/\d{8}T\d{6}Z/g, '<stamp>')
      // The 8 characters typed at the force gate are the made-up fingerprint's.
      .replace(/^> [A-Za-z0-9+/]{8}$/m, '> <prefix>')
      .replace(/SHA256:[A-Za-z0-9+/]{43}/g, 'SHA256:<fingerprint>')
      .replace(/\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC/g, '<time>')
      // The date an overlap began, cut from its time by the wrap: the day the shot was taken.
      .replace(/overlap since \d{4}-\d\d-\d\d$/gm, 'overlap since <date>')
      .replace(/baton-shots-[A-Za-z0-9]{6}/g, '<tmp>')
      // Which characters of two made-up fingerprints differ is chance, so is where the caret line
      // under them starts (two made-up fingerprints share their first character 1 time in 64).
      .replace(/^ *\^[ ^]*$/gm, '<carets>')
      // The host that published (its name, and the padding after it inside a panel).
      .replace(/ by [A-Za-z0-9._-]+ *(│|$)/gm, ' by <host> $1')
      // A pair's age ("0s (mtime)", "1s (mtime)") is how long the run took; its padding with it.
      .replace(/\d+[smhd](?: \d+[smhd])? \(mtime\) +/g, '<age> (mtime) ')
      .replace(/\b\d+:\d\d\b/g, '<m:ss>')
  );
}

function shot(name: string): string {
  return normalised(readFileSync(path.join(SHOTS, `${name}.txt`), 'utf8'));
}

function walk(events: readonly DrillEvent[]): DrillState {
  return events.reduce((state, event) => drillFlow(state, event).state, initialDrillState(1));
}

const ready = () => walk([{ type: 'ready' }]);

/** Every task of every step passed, as the screenshot walk performs them. */
const completed = (): DrillState => passEveryTask(ready(), { checksMs: 1000 });

async function drillFrame(state: DrillState): Promise<string> {
  const view = renderAt(
    <ColorContext.Provider value={false}>
      <DrillScreen state={state} columns={80} rows={24} />
    </ColorContext.Provider>,
    80,
    24,
  );
  mounted.push(view);
  return view.waitFor((frame) => frame.includes('baton drill'), 'the drill screen');
}

describe('the screenshots show what the code prints (80×24)', () => {
  it('drill-rail: the rail over step 1', async () => {
    expect(normalised(await drillFrame(ready()))).toBe(shot('drill-rail'));
  });

  it('drill-summary: the summary after all five steps', async () => {
    const state = completed();
    expect(state.phase).toBe('summary');
    expect(normalised(await drillFrame(state))).toBe(shot('drill-summary'));
  });

  it('status-in-sync (80 and 120 columns) and status-diverged: the same hosts as the screenshots', async () => {
    assertBuilt();
    const run = promisify(execFile);
    // The screenshot script's two controllers: a directory each with its baton.yaml, one store.
    // Under /tmp as the screenshot script makes them: the paths shown wrap at the same place.
    const tmp = mkdtempSync('/tmp/baton-shots-');
    cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
    const baton = (cwd: string, args: string[]) =>
      run(process.execPath, [BIN, ...args], { cwd }).catch((error: { code?: number }) => {
        if (error.code !== 3) throw error;
      });
    const { deployment, storeUrl, a, b } = await shotHosts(tmp, baton);
    const sourcesOf = async (dir: string) =>
      statusSources({
        deployment,
        stateDir: path.join(dir, 'state'),
        storeUrl,
        store: await openStore(storeUrl),
        sealKeyFile: undefined,
      });
    const printed = async (dir: string, columns: number) => {
      const sources = await sourcesOf(dir);
      let code: number | undefined;
      const view = renderAt(
        <StatusApp
          read={() => readStatus(sources)}
          baton="baton"
          watchSeconds={undefined}
          interactive={false}
          onExit={(c) => (code = c)}
        />,
        columns,
        24,
      );
      mounted.push(view);
      await view.waitFor(() => code !== undefined, 'the one read');
      return normalised(view.lastFrame());
    };
    expect(await printed(a, 80)).toBe(shot('status-in-sync'));
    expect(await printed(a, 120)).toBe(shot('status-in-sync-wide'));
    await baton(a, ['ca', 'rotate']);
    await baton(a, ['sync', '--push']);
    expect(await printed(b, 80)).toBe(shot('status-diverged'));

    // The failover on the host left behind: the force screen with the prefix typed, then the result.
    const local = (await readStatus(await sourcesOf(b))).local;
    expect(local.state).toBe('whole');
    const fingerprint = local.state === 'whole' ? local.current.fingerprint : '';
    const share = {
      deployment,
      stateDir: path.join(b, 'state'),
      store: await openStore(storeUrl),
      clock: systemClock,
      host: os.hostname(),
      noSeal: true,
    };
    const walk = renderAt(
      <FailoverApp ports={failoverPorts(share, storeUrl, undefined)} baton="baton" onExit={() => {}} />,
      80,
      24,
    );
    mounted.push(walk);
    await walk.waitFor((f) => f.includes('Replace the local authority (force)'), 'the choices');
    await walk.press('j');
    await walk.waitFor((f) => f.includes('› Replace the local authority'), 'force selected');
    await walk.press(KEY.enter);
    await walk.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    await walk.press(fingerprint.slice(7, 15));
    expect(normalised(await walk.waitFor((f) => f.includes('[ Replace ] enabled'), 'the gate open'))).toBe(
      shot('failover-force'),
    );
    await walk.press(KEY.enter);
    expect(normalised(await walk.waitFor((f) => f.includes('Read again:'), 'the result'))).toBe(
      shot('failover-result'),
    );

    // Both retire, each rotates on its own, ctl-a publishes first: the push-over gate on ctl-b.
    const status = async (dir: string) =>
      JSON.parse(
        (
          await run(process.execPath, [BIN, 'status', '--json'], { cwd: dir }).catch(
            (e: { stdout: string }) => e,
          )
        ).stdout,
      ) as {
        local: { previous_fingerprint: string };
        published: { fingerprint: string };
      };
    const previous = (await status(a)).local.previous_fingerprint;
    for (const host of [a, b]) await baton(host, ['ca', 'retire', '--confirm', previous.slice(7, 15)]);
    await baton(a, ['ca', 'rotate']);
    await baton(a, ['sync', '--push']);
    await baton(b, ['ca', 'rotate']);
    const theirs = (await status(b)).published.fingerprint;
    const keep = renderAt(
      <FailoverApp ports={failoverPorts(share, storeUrl, undefined)} baton="baton" onExit={() => {}} />,
      80,
      24,
    );
    mounted.push(keep);
    await keep.waitFor((f) => f.includes('refused') && f.includes('› Leave it as it is'), 'the choices');
    await keep.press('j');
    await keep.press('j');
    await keep.waitFor((f) => f.includes("› Keep this host's authority"), 'push-over selected');
    await keep.press(KEY.enter);
    await keep.waitFor((f) => f.includes('[ Publish ] disabled'), 'the push-over gate');
    await keep.press(theirs.slice(7, 15));
    expect(normalised(await keep.waitFor((f) => f.includes('[ Publish ] enabled'), 'the gate open'))).toBe(
      shot('failover-push'),
    );
  });

  it('mesh-status: two seeded pairs, one receipted by the provisioner, one pending', async () => {
    assertBuilt();
    // The screenshot's mesh, seeded the same way: `mesh seed` for both pairs, a receipt for web1-app's.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-shot-status-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    for (const name of ['db1', 'web1', 'web2'])
      mkdirSync(path.join(dir, 'machines', name), { recursive: true });
    writeFileSync(
      path.join(dir, 'mesh.yaml'),
      [
        'machines:',
        ...['db1', 'web1', 'web2'].map(
          (name) => `  - { name: ${name}, address: machines/${name}, transport: local }`,
        ),
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres }',
        'consumers:',
        '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
        '  - { name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
        '',
      ].join('\n'),
    );
    const state = path.join(dir, 'state');
    for (const consumer of ['web1-app', 'web2-app']) {
      const secretFile = path.join(dir, `${consumer}.password`);
      writeFileSync(secretFile, `password-of-${consumer}-${Math.random().toString(16).slice(2)}`, {
        mode: 0o600,
      });
      await promisify(execFile)(
        process.execPath,
        [
          BIN,
          '--state-dir',
          state,
          'mesh',
          'seed',
          '--pair',
          `pg-main:${consumer}`,
          '--from-file',
          secretFile,
          '--inventory',
          'mesh.yaml',
        ],
        { cwd: dir },
      );
    }
    const provides = path.join(dir, 'machines', 'db1', 'var/lib/baton/mesh/provides/pg-main');
    mkdirSync(path.join(provides, RECEIPTS_DIR), { recursive: true, mode: 0o700 });
    writeFileSync(
      path.join(provides, RECEIPTS_DIR, 'web1_app'),
      formatReceipt({
        role: 'web1_app',
        digest: secretDigest(readFileSync(path.join(provides, 'web1_app'))),
        applied_at: new Date().toISOString(),
      }),
      { mode: 0o600 },
    );

    const inventory = loadInventory(path.join(dir, 'mesh.yaml'));
    const plan = planRotation(inventory, { by: 'all' });
    const transports = openCommandTransports(inventory.machines, { timeoutMs: 5_000 });
    cleanups.push(() => transports.close());
    const history = await readJournalHistory(state, meshIdentity(inventory));
    const read = (onMachine: (machine: string, ok: boolean) => void) =>
      readMeshStatus(plan, transports.transportFor, history, {
        concurrency: 4,
        nowMs: Date.now(),
        maxAgeMs: undefined,
        onMachine,
      });
    const view = renderAt(
      <MeshStatusApp
        selectorText={plan.selectorText}
        machines={plan.holders.length}
        read={read}
        color={false}
        onExit={() => {}}
      />,
      80,
      24,
    );
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('next:'), 'the pairs read');
    expect(normalised(frame)).toBe(shot('mesh-status'));
  });

  it('rotation-preview: three pairs, each named (the first with its window whole), one line naming where their test logins and reloads are listed; the count typed', async () => {
    // The screenshot's mesh: db1 provides pg-main to web1-app, web2-app and web3-app, each on its own machine, reached locally.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-shot-mesh-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = writeLocalMesh(dir, { webs: 3, file: 'mesh-3.yaml' });
    const inventory = loadInventory(file);
    const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
    const transports = openCommandTransports(inventory.machines, { timeoutMs: 5_000 });
    cleanups.push(() => transports.close());
    const flow = rotationFlow(
      startRotation('20261201T000000Z-000000', plan),
      rotationRunner({
        transportFor: transports.transportFor,
        journalDir: path.join(dir, 'state'),
        operator: 't',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 0,
        pollMs: 10,
      }),
    );
    // As mesh rotate mounts it: the inventory's reload: and connect:, and the mesh plan with the shot's flags.
    const view = renderAt(
      <RotationApp
        flow={flow}
        columns={80}
        color={false}
        app={appHooks(inventory)}
        planCommand="baton --state-dir /tmp/baton-shots-XXXXXX/mesh/state mesh plan --provider pg-main --inventory mesh-3.yaml"
        onExit={() => {}}
      />,
      80,
      24,
    );
    mounted.push(view);
    cleanups.push(async () => {
      await flow.idle();
    });
    await view.waitFor((frame) => frame.includes('(the number of credentials)'), 'the gate open');
    await view.press('3');
    const frame = await view.waitFor((f) => f.includes('(Enter rotates)'), 'the typed count');
    expect(normalised(frame)).toBe(shot('rotation-preview'));
  });
  it('rotation-alternating: a pair seeded on login a, previewed moving to b with no window', async () => {
    assertBuilt();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-shot-alt-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    for (const name of ['db1', 'web1', 'web2', 'web3'])
      mkdirSync(path.join(dir, 'machines', name), { recursive: true });
    writeFileSync(
      path.join(dir, 'mesh-alt.yaml'),
      [
        'machines:',
        ...['db1', 'web1', 'web2', 'web3'].map(
          (name) => `  - { name: ${name}, address: machines/${name}, transport: local }`,
        ),
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres }',
        'consumers:',
        '  - { name: web3-app, machine: web3, reads: each-connection, uses: [pg-main], credential: alternating }',
        '',
      ].join('\n'),
    );
    const state = path.join(dir, 'state');
    const secretFile = path.join(dir, 'web3-app.password');
    writeFileSync(secretFile, `password-of-web3-app-${Math.random().toString(16).slice(2)}`, { mode: 0o600 });
    await promisify(execFile)(
      process.execPath,
      [
        BIN,
        '--state-dir',
        state,
        'mesh',
        'seed',
        '--pair',
        'pg-main:web3-app',
        '--from-file',
        secretFile,
        '--inventory',
        'mesh-alt.yaml',
      ],
      { cwd: dir },
    );
    const inventory = loadInventory(path.join(dir, 'mesh-alt.yaml'));
    const transports = openCommandTransports(inventory.machines, { timeoutMs: 5_000 });
    cleanups.push(() => transports.close());
    // Settled as mesh rotate settles it: the consumer end names login a, so the rotation targets b.
    const history = await readJournalHistory(state, meshIdentity(inventory));
    const { plan } = await inspectPlan(
      planRotation(inventory, { by: 'consumer', name: 'web3-app' }),
      transports.transportFor,
      history,
      4,
      (name) => findMachine(inventory, name),
    );
    expect(plan.pairs[0]!.login).toMatchObject({ role: 'web3_app_b', left: { role: 'web3_app_a' } });
    const flow = rotationFlow(
      startRotation('20261201T000000Z-000000', plan),
      rotationRunner({
        transportFor: transports.transportFor,
        journalDir: state,
        operator: 't',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 0,
        pollMs: 10,
      }),
    );
    const view = renderAt(
      <RotationApp flow={flow} columns={80} color={false} app={appHooks(inventory)} onExit={() => {}} />,
      80,
      24,
    );
    mounted.push(view);
    cleanups.push(async () => {
      await flow.idle();
    });
    await view.waitFor((frame) => frame.includes('(the number of credentials)'), 'the gate open');
    await view.press('1');
    const frame = await view.waitFor((f) => f.includes('(Enter rotates)'), 'the typed count');
    expect(normalised(frame)).toBe(shot('rotation-alternating'));
  });
});
