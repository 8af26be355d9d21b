/**
 * The drill's scenario as data: five steps, each explained in two or three sentences and
 * split into tasks the operator performs in the real views. The flow (src/app/drill/drill-flow.ts),
 * the plain walk-through and `--list` all read this one table, so the words an operator
 * rehearses with are the words CI checks.
 */
import type { Controller } from '../../sandbox/drill-layout.js';

/** Where a task is performed. */
export type TaskKind =
  /** The real read-only status view, on one controller. */
  | { readonly kind: 'status'; readonly controller: Controller }
  /** The real failover walk-through, on one controller. */
  | { readonly kind: 'failover'; readonly controller: Controller }
  /**
   * The real rotation view (plan, gate, typed confirm, commit), for a selection; with
   * `revokePrevious`, as `mesh rotate --revoke-previous`: the logins alternating pairs leave are revoked.
   */
  | { readonly kind: 'rotation'; readonly selector: DrillSelector; readonly revokePrevious?: true }
  /** Something the drill does to the sandbox on the operator's Enter (a fault, a CLI step). */
  | { readonly kind: 'action'; readonly action: DrillAction };

export type { Controller };

export type DrillSelector =
  { readonly by: 'consumer'; readonly name: string } | { readonly by: 'provider'; readonly name: string };

export type DrillAction =
  /** `baton ca rotate` on ctl-b: a new authority, the old one kept as the previous pair. */
  | 'rotate-authority-ctl-b'
  /** worker1 stops answering (its machine directory is unplugged). */
  | 'unplug-worker1'
  /** worker1 answers again. */
  | 'plug-worker1';

export interface TaskSpec {
  /** One line: what the operator does now. */
  readonly label: string;
  /** The equivalent command, shown so the rehearsal transfers to the real night. */
  readonly command: string;
  readonly where: TaskKind;
}

export interface StepSpec {
  readonly number: 1 | 2 | 3 | 4 | 5;
  /** One line, for the rail and `--list`. */
  readonly title: string;
  /** Two or three sentences: why this step matters. */
  readonly explanation: string;
  readonly tasks: readonly TaskSpec[];
}

export const DRILL_STEPS: readonly StepSpec[] = [
  {
    number: 1,
    title: 'status: ctl-a holds and has published; ctl-b is empty',
    explanation:
      'Two controllers, ctl-a and ctl-b, serve one deployment. ctl-a minted the node-wire ' +
      'authority and published it to the S3 store; ctl-b has never held it. The status view ' +
      "compares this host's authority with the published one and changes nothing.",
    tasks: [
      {
        label: 'Read the status on ctl-a (q closes the view).',
        command: 'baton status',
        where: { kind: 'status', controller: 'ctl-a' },
      },
      {
        label: 'Read the status on ctl-b (q closes the view).',
        command: 'baton status',
        where: { kind: 'status', controller: 'ctl-b' },
      },
    ],
  },
  {
    number: 2,
    title: 'ctl-a fails: fail over to ctl-b (ADOPT)',
    explanation:
      'ctl-a has died and ctl-b is promoted. A promoted host with an empty ca/ must ADOPT the ' +
      'published authority, never mint its own: a new authority would drop every node of the ' +
      'fleet at once while the control plane looks healthy.',
    tasks: [
      {
        label: 'On ctl-b, walk the failover and choose adopt.',
        command: 'baton failover',
        where: { kind: 'failover', controller: 'ctl-b' },
      },
    ],
  },
  {
    number: 3,
    title: 'ctl-b rotates and publishes; ctl-a returns: REFUSED, then force',
    explanation:
      'ctl-b rotates the authority and publishes the new one. When ctl-a comes back it still ' +
      'holds the old authority: baton refuses to replace it and says it was left behind by a ' +
      'rotation. Replacing it needs force, confirmed by typing the start of its fingerprint.',
    tasks: [
      {
        label: 'Press Enter to rotate the authority on ctl-b.',
        command: 'baton ca rotate',
        where: { kind: 'action', action: 'rotate-authority-ctl-b' },
      },
      {
        label: 'On ctl-b, walk the failover and publish the new authority.',
        command: 'baton failover',
        where: { kind: 'failover', controller: 'ctl-b' },
      },
      {
        label: 'ctl-a returns: walk its failover, read the refusal, then force.',
        command: 'baton failover',
        where: { kind: 'failover', controller: 'ctl-a' },
      },
    ],
  },
  {
    number: 4,
    title: 'rotate web1-app: a window; alternating web2-app: none',
    explanation:
      'Every pair has its own database role, so rotating one consumer touches one role on two ' +
      "machines: the preview lists exactly db1 and that consumer's machine. With one login role " +
      '(web1-app), new connections with the OLD password fail from the provisioner applying the ' +
      "new one until web1's file changes; the summary measures it. An alternating pair (web2-app) " +
      'gets the new password on the login it is NOT using and moves to it only once the database ' +
      'has it: no window at all.',
    tasks: [
      {
        label: 'Preview and rotate web1-app (type the count to confirm).',
        command: 'baton mesh rotate --consumer web1-app',
        where: { kind: 'rotation', selector: { by: 'consumer', name: 'web1-app' } },
      },
      {
        label: 'Now the same for web2-app, alternating: window none.',
        command: 'baton mesh rotate --consumer web2-app',
        where: { kind: 'rotation', selector: { by: 'consumer', name: 'web2-app' } },
      },
    ],
  },
  {
    number: 5,
    title: 'compromise of db1: rotate pg-main with worker1 down, then up',
    explanation:
      'db1 may be compromised, so every pair of pg-main must move, but worker1 is unreachable. ' +
      'The all-or-nothing gate closes: nothing is generated or sent and every old password keeps ' +
      'working. Bring worker1 back and rotate again with --revoke-previous: all pairs move, and ' +
      'the login web2-app leaves is revoked too.',
    tasks: [
      {
        label: 'Press Enter to unplug worker1.',
        command: '(fault injected by the drill)',
        where: { kind: 'action', action: 'unplug-worker1' },
      },
      {
        label: 'Try to rotate every pair of pg-main: watch the gate close.',
        command: 'baton mesh rotate --provider pg-main',
        where: { kind: 'rotation', selector: { by: 'provider', name: 'pg-main' } },
      },
      {
        label: 'Press Enter to bring worker1 back.',
        command: '(fault removed by the drill)',
        where: { kind: 'action', action: 'plug-worker1' },
      },
      {
        label: 'Rotate every pair of pg-main again, revoking the login web2-app leaves (type the count).',
        command: 'baton mesh rotate --provider pg-main --revoke-previous',
        where: { kind: 'rotation', selector: { by: 'provider', name: 'pg-main' }, revokePrevious: true },
      },
    ],
  },
];

export type StepNumber = StepSpec['number'];

export function isStepNumber(value: number): value is StepNumber {
  return DRILL_STEPS.some((step) => step.number === value);
}

/** `baton drill --list`: one line per step. */
export function listSteps(): string[] {
  return DRILL_STEPS.map((step) => `${step.number}. ${step.title}`);
}
