/**
 * Mounts the rotation view in the terminal and resolves with the exit code. The summary is
 * printed after the view is gone, so what changed where stays in the scrollback (brief for a
 * large rotation: the journal it names has every file).
 */
import { render } from 'ink';
import { startRotation, type RotationEvent, type RotationState } from '../../src/app/rotation-flow.js';
import { finishAfterLeaving } from '../../src/app/rotation-leave.js';
import { rotationRunner, type RotationDeps } from '../../src/app/rotation-run-effect.js';
import { rotationStore } from '../../src/app/rotation-store.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import { RotationApp } from './RotationApp.js';
import { fitTerminal } from '../terminal-stream.js';

export interface MountOptions {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly deps: RotationDeps;
  readonly noColor: boolean;
  readonly stdout?: NodeJS.WriteStream;
}

export async function mountRotationView(options: MountOptions): Promise<number> {
  const stdout = fitTerminal(options.stdout ?? process.stdout);
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
  return finishAfterLeaving(store, options.deps, result, (line) => stdout.write(`${line}\n`));
}
