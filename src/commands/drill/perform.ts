/**
 * Each task performed WITHOUT a screen, through the same code the views run: the status read
 * and its plain text, the failover flow's reducer and ports with scripted key presses, the
 * rotation flow with a scripted typed confirmation, and the drill's own actions. `--plain`
 * (what CI runs) and `--step N` (preparing the sandbox for a later step) both use this, so a
 * walk-through that passes proves the interactive drill's paths, not a copy of them.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { failover, forcePrefix, initialFailover, type FailoverState } from '../../app/failover-flow.js';
import { failoverPorts } from '../../operations/failover-ports.js';
import { failoverRunner } from '../../app/failover-run-effect.js';
import { createFlow } from '../../app/flow.js';
import { runFailoverDialogue } from '../../app/failover-dialogue.js';
import { outcomeWords } from '../../app/failover-outcome.js';
import { initialStatus, statusFlow } from '../../app/status-flow.js';
import { readStatus } from '../../app/status-report.js';
import { statusRunner } from '../../app/status-run-effect.js';
import { statusSources } from '../../app/status-sources.js';
import { statusText } from '../../app/status-text.js';
import { describeVerdict } from '../../app/status-verdict.js';
import { rotateAuthority } from '../../authority/index.js';
import { BatonError } from '../../errors.js';
import { nextStep, renderStep } from '../../next-step.js';
import { PLAIN_SUGGESTER } from '../../suggest-command.js';
import type { Action } from '../../share/types.js';
import { UNPLUGGED_MARKER } from './unplugged.js';
import { MARKS } from '../../app/marks.js';
import { meshStatusNow } from './mesh-status-scripted.js';
import { drillPlan, rotateScripted } from './rotate.js';
import type { DrillSandbox } from '../../sandbox/drill-layout.js';
import type { Controller, DrillAction, TaskSpec } from '../../app/drill/scenario.js';

export type Say = (line: string) => void;

/** The operator's answers on a terminal without cursor addressing; undefined = leave (q, end of input). */
export type Ask = (question: string) => Promise<string | undefined>;

/** The drill's own actions (faults and the CLI-only rotation); the interactive drill runs these too. */
export async function performAction(
  sandbox: DrillSandbox,
  action: DrillAction,
  say: Say = () => {},
): Promise<void> {
  switch (action) {
    case 'rotate-authority-ctl-b': {
      const result = await rotateAuthority(sandbox.stateDir('ctl-b'), sandbox.deployment);
      say(
        `ctl-b rotated its authority: ${result.previous} → ${result.current} (the old pair stays as ca-previous.* during the overlap).`,
      );
      return;
    }
    case 'unplug-worker1':
      writeFileSync(path.join(sandbox.machineRoot('worker1'), UNPLUGGED_MARKER), 'unplugged by the drill\n', {
        mode: 0o644,
      });
      say("worker1 is unplugged: the drill's transports no longer resolve it.");
      return;
    case 'plug-worker1':
      rmSync(path.join(sandbox.machineRoot('worker1'), UNPLUGGED_MARKER), { force: true });
      say('worker1 is back: it resolves again.');
      return;
    default: {
      const never: never = action;
      throw new Error(`unknown drill action ${String(never)}`);
    }
  }
}

/**
 * Performs one task; `say` receives what it did, line by line. With `ask` (the drill's
 * dialogue on TERM=dumb) the operator answers: the failover is the plain failover dialogue
 * with its typed gates, a rotation asks for the count; without it, the script answers.
 */
export async function performScripted(
  sandbox: DrillSandbox,
  task: TaskSpec,
  say: Say = () => {},
  ask?: Ask,
): Promise<void> {
  const where = task.where;
  switch (where.kind) {
    case 'action':
      if (ask && (await ask('Press Enter to do it, q leaves the drill: ')) === undefined) return;
      return performAction(sandbox, where.action, say);
    case 'status':
      if (
        ask &&
        (await ask(
          `Press Enter to run \`${renderStep(PLAIN_SUGGESTER, nextStep('status', { host: where.controller }))}\` on ${where.controller}, q leaves the drill: `,
        )) === undefined
      )
        return;
      return statusScripted(sandbox, where.controller, say);
    case 'failover':
      if (ask) {
        say(`${where.controller}$ baton failover`);
        await runFailoverDialogue({
          ports: failoverPorts(sandbox.share(where.controller), sandbox.storeUrl, undefined),
          baton: 'baton',
          ask,
          write: say,
        });
        return;
      }
      return failoverScripted(sandbox, where.controller, say);
    case 'rotation': {
      const selectorText = drillPlan(sandbox, where.selector).selectorText;
      const printStatus = (when: string, lines: readonly string[]) => {
        say(`$ baton mesh status ${selectorText}   (${when})`);
        for (const line of lines) say(`  ${line}`);
      };
      const status = async (when: string, lines: Promise<string[]>) => printStatus(when, await lines);
      await status('before', meshStatusNow(sandbox, where.selector));
      say(
        `$ baton mesh rotate ${selectorText}${where.revokePrevious ? ' --revoke-previous' : ''}${ask ? '' : ' --yes'}`,
      );
      // The provisioner is held until the provider ends are committed and read, so the middle
      // reading shows `pending` by construction, not by luck; released, it applies and the
      // rotation's wait for receipts goes on as usual.
      const release = await sandbox.provisioner.hold();
      let midway: Promise<string[]> | undefined;
      try {
        await rotateScripted(
          sandbox,
          where.selector,
          (line) => {
            say(`  ${line}`);
            // Printed where it was read, right after the commit line: printed after the summary it
            // read as the state the rotation ended in ("pending" under "Rotated 1 credential").
            if (!midway && line.startsWith('committed '))
              midway = meshStatusNow(sandbox, where.selector)
                .then((lines) => {
                  printStatus('read right after the commit, the provisioner held: not applied yet', lines);
                  return lines;
                })
                .finally(release);
          },
          ask,
          where.revokePrevious ? { endSessions: false } : undefined,
        );
      } finally {
        release();
      }
      if (midway) await midway;
      await status('after', meshStatusNow(sandbox, where.selector));
      return;
    }
    default: {
      const never: never = where;
      throw new Error(`unknown task ${String(never)}`);
    }
  }
}

const GLYPHS = { ok: MARKS.ok.glyph, action: MARKS.action.glyph, refused: MARKS.refused.glyph };

/** What `baton status` reads on a controller of the sandbox (no lock probe: status never takes it). */
export function statusSourcesFor(sandbox: DrillSandbox, controller: Controller) {
  const ctx = sandbox.share(controller);
  return statusSources({
    deployment: ctx.deployment,
    stateDir: ctx.stateDir,
    storeUrl: sandbox.storeUrl,
    store: ctx.store,
    sealKeyFile: undefined,
  });
}

async function statusScripted(sandbox: DrillSandbox, controller: Controller, say: Say): Promise<void> {
  // The status flow the screen runs: one read, then the state it ends in.
  const sources = statusSourcesFor(sandbox, controller);
  const flow = createFlow(
    statusFlow,
    initialStatus,
    statusRunner(() => readStatus(sources)),
  );
  await flow.idle();
  const state = flow.getState();
  if (state.step !== 'showing')
    throw state.step === 'failed' ? state.error : new Error('the status read did not finish');
  const report = state.report;
  say(`${controller}$ baton status`);
  for (const line of statusText(report, GLYPHS).trimEnd().split('\n')) say(`  ${line}`);
}

/**
 * The failover walk with scripted keys: read, choose the action the table allows for this
 * step (adopt, publish, or force), confirm. At the force gate the script first types a wrong
 * prefix, to show the gate stays shut, then the first 8 characters of the LOCAL fingerprint.
 */
async function failoverScripted(sandbox: DrillSandbox, controller: Controller, say: Say): Promise<void> {
  const ports = failoverPorts(sandbox.share(controller), sandbox.storeUrl, undefined);
  // The flow runtime the screen runs; each scripted key is pressed once every effect has settled.
  const flow = createFlow(failover, initialFailover, failoverRunner(ports));
  const dispatch = flow.dispatch;
  say(`${controller}$ baton failover`);
  let typedWrong = false;
  for (let turns = 0; turns < 50; turns += 1) {
    await flow.idle();
    const s: FailoverState = flow.getState();
    switch (s.step) {
      case 'deciding': {
        const words = describeVerdict(s.reading.verdict);
        say(`  ${GLYPHS[words.tone]} ${words.label}: ${words.headline}`);
        const choice = choose(s.actions);
        if (choice === undefined)
          throw new BatonError('failed', {
            what: `The failover on ${controller} offered only: ${s.actions.join(', ')}.`,
            where: sandbox.stateDir(controller),
            next: 'Run the drill again; the sandbox is not in the state this step expects.',
          });
        say(`  chose: ${choice}`);
        for (let i = s.cursor; i < s.actions.indexOf(choice); i += 1) dispatch({ type: 'move', by: 1 });
        for (let i = s.cursor; i > s.actions.indexOf(choice); i -= 1) dispatch({ type: 'move', by: -1 });
        dispatch({ type: 'select', at: new Date() });
        continue;
      }
      case 'confirming':
        dispatch({ type: 'confirm' });
        continue;
      case 'confirming-force': {
        if (!typedWrong) {
          typedWrong = true;
          dispatch({ type: 'typed', text: '00000000' });
          dispatch({ type: 'confirm' });
          const held = flow.getState().step === 'confirming-force';
          say(
            `  typed a wrong prefix "00000000": ${held ? 'the gate stays shut, nothing written' : 'THE GATE OPENED (a bug)'}`,
          );
          continue;
        }
        const prefix = forcePrefix(s.verdict);
        say(`  typed the first 8 characters of the LOCAL fingerprint: ${prefix}`);
        dispatch({ type: 'typed', text: prefix });
        dispatch({ type: 'confirm' });
        continue;
      }
      case 'confirming-push':
        // choose() never picks push-over: no drill step keeps a sibling over the store's.
        throw new Error('the scripted failover opened the push-over gate, which no step asks for');
      case 'done':
        if (s.after === undefined && s.afterError === undefined) continue;
        say(`  ${outcomeWords(s.outcome)}`);
        return;
      case 'failed':
        for (const line of s.error.lines()) say(`  ${line}`);
        throw s.error;
      case 'reading':
      case 'acting':
        throw new Error(`the failover stopped in "${s.step}" with nothing to do`);
    }
  }
  throw new Error('the scripted failover did not finish');
}

/** The action this step expects from the table's offer: adopt, publish over an AHEAD store, else force. */
function choose(actions: readonly Action[]): Action | undefined {
  return (['adopt', 'publish', 'force'] as const).find((a) => actions.includes(a));
}
