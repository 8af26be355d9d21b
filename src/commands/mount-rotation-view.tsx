/**
 * Mounts the rotation view in the terminal and resolves with the exit code. The summary is
 * printed after the view is gone, so what changed where stays in the scrollback (brief for a
 * large rotation: the journal it names has every file).
 */
import { planWords } from '../app/rotation-preview.js';
import { rotationFlow, startRotation, type RotationState } from '../app/rotation-flow.js';
import { finishAfterLeaving } from '../app/rotation-leave.js';
import { rotationRunner, type RotationDeps } from '../app/rotation-run-effect.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';
import { RotationApp } from '../../components/rotation/RotationApp.js';
import type { InkSession } from './mount-view.js';
import { nextStep, renderStep } from '../next-step.js';
import { PLAIN_SUGGESTER } from '../suggest-command.js';
import { keepGoingWhenOutputCloses } from './closed-output.js';

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
  const flow = rotationFlow(startRotation(options.id, options.plan), rotationRunner(options.deps));
  let result: { code: number; state: RotationState } | undefined;
  const instance = ink.mount(
    <RotationApp
      flow={flow}
      color={!options.noColor}
      resumeCommand={renderStep(
        options.deps.suggester ?? PLAIN_SUGGESTER,
        nextStep(`mesh resume ${options.id}`),
      )}
      planCommand={renderStep(
        options.deps.suggester ?? PLAIN_SUGGESTER,
        nextStep(planWords(options.plan.selector)),
      )}
      revoke={options.deps.revoke}
      app={options.deps.app}
      onExit={(code, state) => {
        result = { code, state };
      }}
    />,
  );
  // Nobody will press q on a terminal that went away, nor after a signal stopped the rotation:
  // the view goes, and what finishes the phase under way (the roll-back) runs to its end.
  const stop = options.deps.stop;
  const leave = () => instance.unmount();
  const lost = () => {
    stop?.abort(new Error('the terminal went away'));
    leave();
  };
  stop?.signal.addEventListener('abort', leave, { once: true });
  keepGoingWhenOutputCloses(stdout, lost);
  keepGoingWhenOutputCloses(process.stdin, lost);
  if (stop?.signal.aborted) leave();
  await instance.waitUntilExit();
  stop?.signal.removeEventListener('abort', leave);
  return finishAfterLeaving(flow, options.deps, result, (line) => stdout.write(`${line}\n`));
}
