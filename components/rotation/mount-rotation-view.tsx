/**
 * Mounts the rotation view in the terminal and resolves with the exit code. The full summary
 * is printed after the view is gone, so what changed where stays in the scrollback.
 */
import { render } from 'ink';
import { startRotation, isTerminal, type RotationEvent, type RotationState } from '../../src/app/rotation-flow.js';
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
  const final = result ?? { code: 3, state: store.state() };
  if (isTerminal(final.state)) for (const line of summaryLines(final.state, Math.round(options.deps.waitMs / 1000))) stdout.write(`${line}\n`);
  else if (final.state.step === 'committing') stdout.write(`Left during the commit: some files may be live. Finish it with: baton mesh resume ${options.id}\n`);
  else stdout.write(`Left during ${final.state.step}: nothing took effect${final.state.step === 'preparing' ? ' (staged *.next files may remain; they are never read)' : ''}.\n`);
  return final.code;
}
