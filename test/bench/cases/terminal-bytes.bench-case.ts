/**
 * Terminal bytes: everything the TTY rotation view writes during the 1,000-holder rotation of
 * the fan-out figure (20 ms per call, concurrency 8 — the CLI default), typed confirm and `q`
 * included, plus the summary printed after it. Over SSH every byte is carried.
 *
 * The view is mounted the way `mountRotationView` mounts it (same component, same render
 * options) on a counting 80×24 TTY, with keys typed into a TTY stdin. Baseline, same run: the
 * bytes of the plain `--yes` log of the same rotation.
 */
import path from 'node:path';
import { runRotationPlain } from '../../../src/app/rotation-plain.js';
import { rotationRunner } from '../../../src/app/rotation-run-effect.js';
import {
  confirmationText,
  isTerminal,
  rotationFlow,
  startRotation,
  type RotationState,
} from '../../../src/app/rotation-flow.js';
import { summaryLines } from '../../../src/app/rotation-text.js';
import { transportsFor } from '../../../src/transport/make-transport.js';
import { withLatency } from '../lib/slow-transport.js';
import type { BenchCase, BenchContext } from '../lib/context.js';
import { CountingTerminal, TypingStdin } from '../lib/fake-terminal.js';
import { figure } from '../lib/figure.js';
import { disjointMesh, type DisjointMesh } from '../lib/mesh-fixture.js';
import { withLiveProvisioner } from '../../mesh/receipt-writer.js';
import { FAN_OUT_PAIRS, LATENCY_MS, verifyDelivered } from './fan-out.bench-case.js';

const CONCURRENCY = 8;

function deps(ctx: BenchContext, mesh: DisjointMesh, tag: string) {
  return {
    transportFor: withLiveProvisioner(
      transportsFor(mesh.inventory.machines, { timeoutMs: 60_000 }, { wrap: withLatency(LATENCY_MS) }),
      (m) => path.join(mesh.root, 'machines', m),
    ),
    journalDir: ctx.tempDir(`journal-${tag}`),
    operator: 'bench',
    resolve: { concurrency: CONCURRENCY },
    concurrency: CONCURRENCY,
    waitMs: 60_000,
    pollMs: 50,
  };
}

/** Resolves once `predicate` holds for the store's state (checked on every change). */
function until(
  subscribe: (l: (s: RotationState) => void) => () => void,
  current: () => RotationState,
  predicate: (s: RotationState) => boolean,
): Promise<void> {
  return new Promise((resolve) => {
    if (predicate(current())) return resolve();
    const off = subscribe((state) => {
      if (predicate(state)) {
        off();
        resolve();
      }
    });
  });
}

/**
 * Waits until the terminal's latest frame shows `text`: a key sent before the frame that
 * expects it is drawn lands in the previous screen's handler (docs/testing.md, "Ink and terminals").
 */
async function shows(terminal: CountingTerminal, text: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!terminal.recent.includes(text)) {
    if (Date.now() > deadline)
      throw new Error(`the view never showed "${text}"; last output:\n${terminal.recent}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Then a few turns for Ink to run the effects that come with the frame (its input handler).
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function viewBytes(
  ctx: BenchContext,
  mesh: DisjointMesh,
): Promise<{ bytes: number; writes: number; summaryBytes: number }> {
  // Ink draws only the last frame when it believes it runs in CI, and chalk decides on colour
  // when first loaded: a real terminal has colour and no CI, so the bench sets both before
  // Ink comes in.
  for (const name of Object.keys(process.env))
    if (name === 'CI' || name === 'CONTINUOUS_INTEGRATION' || name.startsWith('CI_'))
      delete process.env[name];
  process.env.FORCE_COLOR = '1';
  const [{ render }, React, { RotationApp }] = await Promise.all([
    import('ink'),
    import('react'),
    import('../../../components/rotation/RotationApp.js'),
  ]);
  const terminal = new CountingTerminal(80, 24);
  const stdin = new TypingStdin();
  const store = rotationFlow(startRotation('bench-view', mesh.plan), rotationRunner(deps(ctx, mesh, 'view')));
  const subscribe = store.subscribe;
  let exitState: RotationState | undefined;
  const instance = render(
    React.createElement(RotationApp, {
      flow: store,
      columns: 80,
      color: true,
      onExit: (_code: number, state: RotationState) => (exitState = state),
    }),
    {
      stdout: terminal as unknown as NodeJS.WriteStream,
      stdin: stdin as unknown as NodeJS.ReadStream,
      exitOnCtrlC: false,
      patchConsole: false,
    },
  );
  await until(subscribe, store.getState, (s) => s.step !== 'resolving');
  if (store.getState().step !== 'confirming')
    throw new Error(`the gate did not open: ${store.getState().step}`);
  const count = confirmationText(mesh.plan);
  await shows(terminal, `Type ${count}`);
  for (let i = 1; i <= count.length; i++) {
    stdin.type(count[i - 1]!);
    await shows(terminal, `> ${count.slice(0, i)}`);
  }
  stdin.type('\r');
  await until(subscribe, store.getState, isTerminal);
  await store.finished();
  await shows(terminal, 'Rotated');
  stdin.type('q');
  await instance.waitUntilExit();
  const state = store.getState();
  if (!exitState || state.step !== 'done') throw new Error(`the view ended at ${state.step}`);
  verifyDelivered(mesh);
  const summary = summaryLines(state, 0)
    .map((line) => `${line}\n`)
    .join('');
  return {
    bytes: terminal.bytes + Buffer.byteLength(summary),
    writes: terminal.writes,
    summaryBytes: Buffer.byteLength(summary),
  };
}

async function plainBytes(ctx: BenchContext, mesh: DisjointMesh): Promise<number> {
  let bytes = 0;
  const { code } = await runRotationPlain({
    id: 'bench-plain',
    plan: mesh.plan,
    deps: deps(ctx, mesh, 'plain'),
    yes: true,
    write: (line) => (bytes += Buffer.byteLength(`${line}\n`)),
  });
  if (code !== 0) throw new Error(`the plain rotation exited ${code}`);
  return bytes;
}

export const terminalBytesCase: BenchCase = {
  name: 'bytes',
  async run(ctx) {
    const mesh = disjointMesh(ctx.tempDir('bytes', { tmpfs: true }), FAN_OUT_PAIRS);
    ctx.log('bytes: the rotation view over 1,000 holders (typed confirm, q)');
    const view = await viewBytes(ctx, mesh);
    ctx.log('bytes: the same rotation as plain --yes lines');
    const plain = await plainBytes(ctx, mesh);
    return {
      figures: [
        figure({
          id: 'terminal-bytes.rotation-view',
          title: `Terminal bytes: TTY rotation view, ${mesh.plan.holders.length} holders, 80×24`,
          measured: { label: 'rotation view + summary', value: view.bytes / 1024, unit: 'KB' },
          baseline: { label: 'plain --yes log of the same rotation', value: plain / 1024, unit: 'KB' },
          goal: { kind: 'absolute', max: 200, unit: 'KB' },
          notes: [
            `the view's frames ${((view.bytes - view.summaryBytes) / 1024).toFixed(1)} KB in ${view.writes} writes, the summary printed after it ${(view.summaryBytes / 1024).toFixed(1)} KB`,
            `colour on (FORCE_COLOR=1); 20 ms per call, concurrency ${CONCURRENCY}; typed confirm and q included`,
          ],
        }),
      ],
      skipped: [],
    };
  },
};
