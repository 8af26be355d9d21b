/**
 * The interactive drill: the composition root that owns the drill flow's state, runs its
 * effects against the sandbox, and shows either the drill's own screen or — for a task — the
 * REAL view (StatusApp, FailoverApp, RotationApp) under the drill's rail.
 *
 * Each view is mounted as its own Ink render, exactly as its command mounts it, so the view
 * quitting (its `q`) ends that render and hands the terminal back to the drill instead of
 * ending the drill. Between renders no full-screen clear is written (it flickers over SSH).
 */

import type { Instance } from 'ink';
import {
  drillFlow,
  drillExitCode,
  initialDrillState,
  currentTask,
  currentStep,
  viewIsOpen,
  type DrillEffect,
  type DrillEvent,
  type DrillState,
} from '../../app/drill/drill-flow.js';
import { createFlow, type EffectRunner } from '../../app/flow.js';
import { asBatonError } from '../../errors.js';
import { runChecks } from './checks.js';
import { meshStatusNow } from './mesh-status-scripted.js';
import { newNotebook, noteBefore } from './notebook.js';
import { performAction } from './perform.js';
import { seedPasswords } from './rotate.js';
import { prepareForStep } from './plain.js';
import { startSandbox } from '../../sandbox/drill-sandbox.js';
import type { DrillSandbox } from '../../sandbox/drill-layout.js';
import type { StepNumber } from '../../app/drill/scenario.js';
import { makeTeardown, teardownOnSignals } from '../../sandbox/teardown.js';
import { openInk } from '../mount-view.js';

export interface InteractiveOptions {
  readonly first: StepNumber;
  /** The last step practised: `--step N` practises that one step. */
  readonly last: StepNumber;
  readonly keep: boolean;
  readonly noColor: boolean;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

export async function runInteractiveDrill(options: InteractiveOptions): Promise<number> {
  // Ink first (it fixes the colour setting), then the views that import it.
  const ink = await openInk(options, options.noColor);
  const [{ DrillRoot }, { DrillTaskFrame }] = await Promise.all([
    import('../../../components/drill/DrillRoot.js'),
    import('../../../components/drill/DrillTaskFrame.js'),
  ]);
  const teardown = makeTeardown();
  const release = teardownOnSignals(teardown);
  const notebook = newNotebook();
  let sandbox: DrillSandbox | undefined;
  let drillInstance: Instance | undefined;
  let viewOpen = false;
  let quitting = false;
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    resolveDone = resolve;
  });

  const quit = async () => {
    if (quitting) return;
    quitting = true;
    // Every later event (a check or a start-up stage finishing) is dropped: the screen is gone.
    flow.close();
    drillInstance?.unmount();
    drillInstance = undefined;
    options.stdout.write('baton drill: stopping the servers and removing the sandbox…\n');
    // Left during start-up: stop at the next stage and let the one running finish writing first.
    stopStarting.abort();
    await starting;
    const problems = await teardown.run();
    for (const problem of problems) options.stderr.write(`baton drill: cleaning up: ${problem}\n`);
    if (sandbox && options.keep) options.stdout.write(`baton drill: the sandbox is kept in ${sandbox.dir}\n`);
    else options.stdout.write('baton drill: the sandbox was removed.\n');
    resolveDone(drillExitCode(flow.getState()));
  };

  const runner: EffectRunner<DrillState, DrillEvent, DrillEffect> = {
    async run(effect, { state }) {
      if (effect.type === 'quit') {
        void quit();
        return undefined;
      }
      if (!sandbox) return { type: 'task-failed', lines: ['The sandbox is not running.'] };
      switch (effect.type) {
        case 'open':
          await noteBefore(sandbox, notebook);
          return { type: 'opened' };
        case 'perform': {
          const task = currentTask(state);
          if (task.where.kind !== 'action') return { type: 'task-finished' };
          await performAction(sandbox, task.where.action);
          return { type: 'task-finished' };
        }
        case 'check': {
          const results = await runChecks(sandbox, notebook.before!, effect.step, effect.task);
          // After a rotation the check screen shows `mesh status` too: the pairs' states are the lesson of steps 4 and 5.
          const where = currentTask(state).where;
          const meshStatus =
            where.kind === 'rotation'
              ? await meshStatusNow(sandbox, where.selector).catch((error: unknown) => [
                  `mesh status could not be read: ${asBatonError(error, { what: 'mesh status' }).what}`,
                ])
              : [];
          return { type: 'checks-done', results, meshStatus, at: Date.now() };
        }
        default: {
          const never: never = effect;
          throw new Error(`unknown drill effect ${String(never)}`);
        }
      }
    },
    // Whatever broke (noting, the action, the checks' own reading) is shown and offered again.
    failed(effect, error) {
      const what =
        effect.type === 'open'
          ? 'Noting the sandbox failed'
          : effect.type === 'check'
            ? 'Checking the sandbox failed'
            : `${currentTask(flow.getState()).label} failed`;
      return { type: 'task-failed', lines: asBatonError(error, { what }).lines() };
    },
  };
  const flow = createFlow(
    drillFlow,
    { state: initialDrillState(options.first, options.last), effects: [] },
    runner,
  );
  const dispatch = flow.dispatch;
  // After the current key handler returns: a render must not be unmounted from inside its own input callback.
  flow.subscribe(() => setImmediate(show));

  const onIntent = (intent: 'enter' | 'help' | 'escape' | 'quit' | 'interrupt') => {
    if (intent === 'enter') dispatch({ type: 'enter', at: Date.now() });
    else dispatch({ type: intent });
  };

  const drillElement = () => <DrillRoot state={flow.getState()} onIntent={onIntent} />;

  const show = () => {
    if (quitting || viewOpen) return;
    if (viewIsOpen(flow.getState())) {
      viewOpen = true;
      drillInstance?.unmount();
      drillInstance = undefined;
      void openView().then(
        () => {
          viewOpen = false;
          if (!quitting) dispatch({ type: 'task-finished' });
        },
        (error: unknown) => {
          viewOpen = false;
          dispatch({
            type: 'task-failed',
            lines: asBatonError(error, {
              what: `The view for "${currentTask(flow.getState()).label}" could not be opened`,
            }).lines(),
          });
        },
      );
      return;
    }
    if (drillInstance) drillInstance.rerender(drillElement());
    else drillInstance = ink.mount(drillElement());
  };

  /** Mounts the task's real view under the rail; resolves when the operator closes it. */
  const openView = async () => {
    const box = sandbox!;
    let interrupted = false as boolean; // set by onInterrupt while ink runs
    const view = await taskView(box, flow.getState(), options.noColor);
    const frame = (
      <DrillTaskFrame
        state={flow.getState()}
        onWrongTurn={(what) => dispatch({ type: 'wrong-turn', what })}
        onInterrupt={() => {
          interrupted = true;
        }}
      >
        {view.element}
      </DrillTaskFrame>
    );
    const instance = ink.mount(frame);
    await instance.waitUntilExit();
    await view.finished();
    if (interrupted) await quit();
  };

  const stopStarting = new AbortController();
  const start = async () => {
    try {
      ({ sandbox } = await startSandbox({
        keep: options.keep,
        teardown,
        seed: seedPasswords,
        signal: stopStarting.signal,
        onProgress: (text) => dispatch({ type: 'progress', text }),
      }));
      if (options.first > 1) {
        dispatch({
          type: 'progress',
          text: `performing steps 1–${options.first - 1} to prepare step ${options.first}…`,
        });
        await prepareForStep(sandbox, options.first, stopStarting.signal);
      }
      dispatch({ type: 'ready' });
    } catch (error) {
      dispatch({
        type: 'setup-failed',
        lines: asBatonError(error, { what: 'The sandbox could not be set up' }).lines(),
      });
    }
  };
  show();
  const starting = start();
  const code = await done;
  release();
  return code;
}

interface TaskView {
  readonly element: React.ReactElement;
  /** Resolves when the view's own work (a rotation's effects) has settled. */
  finished(): Promise<void>;
}

/** The real view for the current task, wired to the sandbox the way its command wires it. */
async function taskView(sandbox: DrillSandbox, state: DrillState, noColor: boolean): Promise<TaskView> {
  const where = currentTask(state).where;
  const settled = { finished: async () => {} };
  switch (where.kind) {
    case 'status': {
      const [{ StatusApp }, { readStatus }, { statusSourcesFor }] = await Promise.all([
        import('../../../components/StatusApp.js'),
        import('../../app/status-report.js'),
        import('./perform.js'),
      ]);
      const sources = statusSourcesFor(sandbox, where.controller);
      return {
        ...settled,
        element: (
          <StatusApp
            read={() => readStatus(sources)}
            baton="baton"
            watchSeconds={5}
            interactive
            escCloses
            onExit={() => {}}
          />
        ),
      };
    }
    case 'failover': {
      const [{ FailoverApp }, { failoverPorts }] = await Promise.all([
        import('../../../components/FailoverApp.js'),
        import('../../operations/failover-ports.js'),
      ]);
      return {
        ...settled,
        element: (
          <FailoverApp
            ports={failoverPorts(sandbox.share(where.controller), sandbox.storeUrl, undefined)}
            baton="baton"
            closes
            onExit={() => {}}
          />
        ),
      };
    }
    case 'rotation': {
      const [
        { RotationApp },
        { startRotation, rotationFlow },
        { rotationRunner },
        { settledDrillPlan, drillRotationDeps, newDrillRotationId },
      ] = await Promise.all([
        import('../../../components/rotation/RotationApp.js'),
        import('../../app/rotation-flow.js'),
        import('../../app/rotation-run-effect.js'),
        import('./rotate.js'),
      ]);
      const revoke = where.revokePrevious ? { endSessions: false } : undefined;
      const deps = drillRotationDeps(sandbox, revoke);
      const flow = rotationFlow(
        startRotation(newDrillRotationId(), await settledDrillPlan(sandbox, where.selector, deps)),
        rotationRunner(deps),
      );
      return {
        // A rotation left mid-way (Ctrl-C) finishes the phase it is in before the checks read the machines.
        finished: () =>
          new Promise<void>((resolve) => {
            const settledNow = () =>
              !['resolving', 'preparing', 'committing', 'applying', 'unstaging'].includes(
                flow.getState().step,
              );
            if (settledNow()) return resolve();
            const unsubscribe = flow.subscribe(() => {
              if (!settledNow()) return;
              unsubscribe();
              resolve();
            });
          }),
        element: (
          <RotationApp
            flow={flow}
            color={!noColor}
            summaryOnQuit={false}
            revoke={revoke}
            app={deps.app}
            onExit={() => {}}
          />
        ),
      };
    }
    case 'action':
      throw new Error(`step ${currentStep(state).number}: an action task has no view`);
    default: {
      const never: never = where;
      throw new Error(`unknown task ${String(never)}`);
    }
  }
}
