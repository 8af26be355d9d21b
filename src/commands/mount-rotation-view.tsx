/**
 * Mounts the rotation view in the terminal and resolves with the exit code. The summary is
 * printed after the view is gone, so what changed where stays in the scrollback (brief for a
 * large rotation: the journal it names has every file).
 */
import { EXIT_CODES } from '../errors.js';
import { startRotation, type RotationEvent, type RotationState } from '../app/rotation-flow.js';
import { finishAfterLeaving } from '../app/rotation-leave.js';
import { rotationRunner, type RotationDeps } from '../app/rotation-run-effect.js';
import { rotationStore } from '../app/rotation-store.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';
import { RotationApp } from '../../components/rotation/RotationApp.js';
import type { InkSession } from './mount-view.js';
import { PLAIN_SUGGESTER, suggest } from '../suggest-command.js';

export interface MountOptions {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly deps: RotationDeps;
  readonly noColor: boolean;
  readonly stdout: NodeJS.WriteStream;
}

/** `ink` comes from openInk (mount-view.ts), opened before this module was imported. */
export async function mountRotationView(ink: InkSession, options: MountOptions): Promise<number> {
  const stdout = options.stdout;
  const listeners = new Set<(state: RotationState, event: RotationEvent | undefined) => void>();
  const store = rotationStore(startRotation(options.id, options.plan), rotationRunner(options.deps), (state, event) => {
    for (const listener of listeners) listener(state, event);
  });
  const subscribe = (listener: (state: RotationState, event: RotationEvent | undefined) => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  let result: { code: number; state: RotationState } | undefined;
  const instance = ink.mount(
    <RotationApp
      store={store}
      subscribe={subscribe}
      color={!options.noColor}
      resumeCommand={suggest(options.deps.suggester ?? PLAIN_SUGGESTER, `mesh resume ${options.id}`)}
      onExit={(code, state) => {
        result = { code, state };
      }}
    />,
  );
  store.finished().catch((error: unknown) => {
    result ??= { code: EXIT_CODES.failed, state: store.state() };
    stdout.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
    instance.unmount();
  });
  await instance.waitUntilExit();
  return finishAfterLeaving(store, options.deps, result, (line) => stdout.write(`${line}\n`));
}
