/**
 * Mounts the rotation view in the terminal and resolves with the exit code. The summary is
 * printed after the view is gone, so what changed where stays in the scrollback (brief for a
 * large rotation: the journal it names has every file).
 */
import path from 'node:path';
import { render } from 'ink';
import { exitCodeOf, startRotation, isTerminal, type RotationEvent, type RotationState } from '../../src/app/rotation-flow.js';
import { unstageAll } from '../../src/mesh/delivery.js';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { rotationRunner, type RotationDeps } from '../../src/app/rotation-run-effect.js';
import { rotationStore } from '../../src/app/rotation-store.js';
import { summaryLines } from '../../src/app/rotation-text.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import { RotationApp } from './RotationApp.js';

export interface MountOptions {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly deps: RotationDeps;
  readonly noColor: boolean;
  readonly stdout?: NodeJS.WriteStream;
}

export async function mountRotationView(options: MountOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout;
  const listeners = new Set<(state: RotationState, event: RotationEvent | undefined) => void>();
  const store = rotationStore(startRotation(options.id, options.plan), rotationRunner(options.deps), (state, event) => {
    for (const listener of listeners) listener(state, event);
  });
  const subscribe = (listener: (state: RotationState, event: RotationEvent | undefined) => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  let result: { code: number; state: RotationState } | undefined;
  const instance = render(
    <RotationApp
      store={store}
      subscribe={subscribe}
      columns={stdout.columns || 80}
      color={!options.noColor}
      onExit={(code, state) => {
        result = { code, state };
      }}
    />,
    { stdout, exitOnCtrlC: false, patchConsole: false },
  );
  store.finished().catch((error: unknown) => {
    result ??= { code: 1, state: store.state() };
    stdout.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
    instance.unmount();
  });
  await instance.waitUntilExit();
  if (store.state().step === 'applying') stdout.write('Committed; still waiting for provider receipts (Ctrl-C stops waiting, nothing is undone)…\n');
  store.stop();
  await store.idle();
  const state = store.state();
  const waitSeconds = Math.round(options.deps.waitMs / 1000);
  if (isTerminal(state)) {
    for (const line of summaryLines(state, waitSeconds, { journal: path.join(options.deps.journalDir, JOURNAL_FILE) })) stdout.write(`${line}\n`);
    return result?.state.step === state.step ? result.code : exitCodeOf(state);
  }
  if (state.step === 'committing') {
    // Prepared but the operator left before the commit started: take the staged files back.
    const failures = await unstageAll(state.plan.holders, options.deps.transportFor, options.deps.concurrency);
    stdout.write(
      failures.length === 0
        ? 'Interrupted before the commit: every staged file was removed; nothing took effect.\n'
        : `Interrupted before the commit; staged files could NOT be removed on ${failures.map((f) => `${f.machine} (${f.reason})`).join(', ')}. They are never read; remove the *.next files there.\n`,
    );
    return 3;
  }
  if (state.step === 'applying') {
    stdout.write(`Rotation ${options.id} committed; provider receipts were not waited for. Check each provisioner's receipt.\n`);
    return 0;
  }
  stdout.write(`Left while ${state.step}: nothing was generated or sent.\n`);
  return result?.code ?? 3;
}
