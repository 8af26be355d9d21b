/**
 * `mesh status` of two builds against the fleet case's floor, in interleaved turns on one fixture
 * (lib/fleet-fixture.ts, the same loopback sshd with its default limits): for a change to status,
 * measured in the same minutes as its baseline — on a shared, noisy host only ratios taken side
 * by side mean anything. Not a bench case: it needs two builds.
 *
 *   npx tsx test/bench/status-ab.ts <bin A> <bin B> [machines=50] [turns=6] [bin C]
 *
 * e.g. A a worktree of main (`git worktree add … main`, `npm run build`), B this tree. Each turn
 * runs A, B and the floor (`xargs -P 8`, one `ssh <alias> cat <its files>` per machine), their
 * order rotated each turn; prints each run and the medians, each build ÷ floor and B ÷ A, and the
 * CPU per machine of each side (on a loaded host the steadier figure: what a run costs the cores).
 * A third build C is measured in the same turns: an older one (round 6's b4ed335, before the agent,
 * for issue 43's "within noise" of it on this host). It does not know the inventory's `reads:`, so
 * with C every build's status reads the inventory without it (status shows it only in the app line).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { RECEIPTS_DIR } from '../../src/mesh/digest.js';
import { startSshd } from '../helpers/sshd.js';
import { BIN, makeContext } from './lib/context.js';
import { FLEET_PROVIDER, followProvider, makeFleet } from './lib/fleet-fixture.js';
import { occupancy } from './lib/place-occupancy.js';
import { runTree } from './lib/process-tree-cpu.js';
import { summarize } from './lib/stats.js';
import type { Sshd } from '../helpers/sshd.js';

const [binA, binB, machines = '50', turnsText = '6', binC] = process.argv.slice(2);
if (!binA || !binB) throw new Error('usage: status-ab.ts <bin A> <bin B> [machines] [turns] [bin C]');
const n = Number(machines);
const turns = Number(turnsText);
const CONCURRENCY = 8;

/** The loopback sshd's CPU so far (ms), its reaped children's included (as the fleet case reads it). */
function sshdCpuMs(sshd: Sshd): number {
  const pid = readFileSync(path.join(sshd.dir, 'sshd.pid'), 'utf8').trim();
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

const ctx = makeContext(1);
const sshd = await startSshd({ settings: { MaxStartups: undefined } });
try {
  const fleet = makeFleet(ctx, sshd, n, 'status-ab');
  const argvOf = (bin: string, args: readonly string[]) =>
    fleet.batonArgv(args).map((a) => (a === BIN ? path.resolve(bin) : a));
  const run = (argv: readonly string[]) =>
    new Promise<{ code: number; ms: number; out: string }>((resolve) => {
      const started = performance.now();
      execFile(
        argv[0]!,
        argv.slice(1),
        { cwd: fleet.root, env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' }, maxBuffer: 1 << 26 },
        (error, stdout, stderr) =>
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
            ms: performance.now() - started,
            out: `${stdout.slice(-1000)}${stderr.slice(-1000)}`,
          }),
      );
    });
  // A first rotation writes every file (and its receipt) as the fleet case's does.
  const provisioner = followProvider(fleet.providesDir);
  const first = await run(
    argvOf(binA, [
      'mesh',
      'rotate',
      '--provider',
      FLEET_PROVIDER,
      '--inventory',
      fleet.inventory,
      '--yes',
      '--wait',
      '120',
      '--timeout',
      '60',
    ]),
  );
  provisioner.stop();
  if (first.code !== 0) throw new Error(`the first rotation exited ${first.code}: ${first.out}`);
  const files = (m: string) =>
    m === 'db1'
      ? `${fleet.providesDir}/* ${fleet.providesDir}/${RECEIPTS_DIR}/*`
      : `${path.join(fleet.meshOf(m), 'consumes', FLEET_PROVIDER)}/*`;
  const floorList = path.join(fleet.root, 'floor-status.txt');
  writeFileSync(
    floorList,
    fleet.machines.map((m) => `ssh -F ${fleet.config} -T ${m} 'cat ${files(m)}' >/dev/null\n`).join(''),
  );
  /** A run's wall time, its own tree's CPU (baton or xargs, every ssh) and the loopback sshd's side, per machine. */
  let traced = 0;
  const measured = async (argv: readonly string[], what: string) => {
    const before = sshdCpuMs(sshd);
    // baton's places (mapBounded): from the last one given back to its exit is its closing.
    const trace = path.join(fleet.root, `places-${traced++}.txt`);
    const startedAt = Date.now();
    const r = await runTree(argv, {
      cwd: fleet.root,
      env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '', BATON_TRACE_PLACES: trace },
    });
    if (r.exitCode !== 0)
      throw new Error(`${what} exited ${r.exitCode}: ${r.stdout.slice(-1000)}${r.stderr.slice(-1000)}`);
    const closing = occupancy(trace, startedAt, startedAt + r.wallMs)?.afterMs ?? 0;
    // sshd reaps its sessions after the client has gone.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return { ms: r.wallMs, cpu: r.cpuMs / n, sshd: (sshdCpuMs(sshd) - before) / n, closing };
  };
  const statusInventory = binC ? path.join(fleet.root, 'mesh-without-reads.yaml') : fleet.inventory;
  if (binC)
    writeFileSync(statusInventory, readFileSync(fleet.inventory, 'utf8').replace(/, reads: [a-z-]+/g, ''));
  const status = (bin: string) => () =>
    measured(
      argvOf(bin, ['mesh', 'status', '--provider', FLEET_PROVIDER, '--inventory', statusInventory]),
      bin,
    );
  const floor = () =>
    measured(['sh', '-c', `xargs -P ${CONCURRENCY} -d '\\n' -I{} sh -c '{}' < ${floorList}`], 'the floor');
  type Run = Awaited<ReturnType<typeof floor>>;
  const kinds = [
    { name: 'A', go: status(binA), runs: [] as Run[] },
    { name: 'B', go: status(binB), runs: [] as Run[] },
    ...(binC ? [{ name: 'C', go: status(binC), runs: [] as Run[] }] : []),
    { name: 'floor', go: floor, runs: [] as Run[] },
  ];
  for (let t = 0; t < turns; t++) {
    const order = kinds.map((_, i) => kinds[(i + t) % kinds.length]!);
    const said: string[] = [];
    for (const kind of order) {
      const got = await kind.go();
      kind.runs.push(got);
      said.push(
        `${kind.name} ${(got.ms / 1000).toFixed(2)} s (${got.cpu.toFixed(0)} + ${got.sshd.toFixed(0)} ms CPU/machine${kind.name === 'floor' ? '' : `, closing ${got.closing.toFixed(0)} ms`})`,
      );
    }
    process.stderr.write(`turn ${t + 1}: ${said.join(', ')}\n`);
  }
  const runsOf = (name: string) => kinds.find((k) => k.name === name)?.runs;
  const [a, b, c, f] = ['A', 'B', 'C', 'floor'].map(runsOf);
  const med = (runs: Run[], key: keyof Run) => summarize(runs.map((r) => r[key])).median;
  const ratio = (x: Run[], y: Run[], key: keyof Run) => med(x, key) / med(y, key);
  const perTurn = (x: Run[]) => x.map((r, i) => (r.ms / f![i]!.ms).toFixed(2)).join(' ');
  process.stdout.write(
    [
      `N=${n}, ${turns} turns (A ${binA}, B ${binB})`,
      `wall medians: A ${(med(a!, 'ms') / 1000).toFixed(2)} s, B ${(med(b!, 'ms') / 1000).toFixed(2)} s, floor ${(med(f!, 'ms') / 1000).toFixed(2)} s; A/floor ${ratio(a!, f!, 'ms').toFixed(2)}×, B/floor ${ratio(b!, f!, 'ms').toFixed(2)}×, B/A ${ratio(b!, a!, 'ms').toFixed(2)}×`,
      `per turn A/floor: ${perTurn(a!)}; B/floor: ${perTurn(b!)}`,
      `controller CPU per machine (medians): A ${med(a!, 'cpu').toFixed(0)} ms, B ${med(b!, 'cpu').toFixed(0)} ms, floor ${med(f!, 'cpu').toFixed(0)} ms`,
      `machines' side (sshd, its sessions, what they ran) per machine: A ${med(a!, 'sshd').toFixed(0)} ms, B ${med(b!, 'sshd').toFixed(0)} ms, floor ${med(f!, 'sshd').toFixed(0)} ms`,
      `closing (the last place given back → exit), medians: A ${med(a!, 'closing').toFixed(0)} ms, B ${med(b!, 'closing').toFixed(0)} ms`,
      ...(c
        ? [
            `C ${binC}: wall median ${(med(c, 'ms') / 1000).toFixed(2)} s, C/floor ${ratio(c, f!, 'ms').toFixed(2)}× (per turn ${perTurn(c)}), B/C ${ratio(b!, c, 'ms').toFixed(2)}×; controller CPU ${med(c, 'cpu').toFixed(0)} ms, machines' side ${med(c, 'sshd').toFixed(0)} ms per machine`,
          ]
        : []),
      '',
    ].join('\n'),
  );
} finally {
  await sshd.stop();
  ctx.cleanup();
}
