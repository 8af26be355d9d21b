/**
 * The provisioners' health in `mesh status`'s words: one line per provider whose provisioner
 * cannot apply anything, with its way out, and the same as JSON (`provisioners`). A healthy
 * provisioner, or one without a heartbeat, adds nothing to the plain lines.
 */
import { MARKS } from './marks.js';
import { renderSaidBare, saidSteps, type NextStepJson } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import { provisionerHealthy, type ProvisionerHealth } from '../mesh/provisioner-heartbeat.js';

export function provisionerHealthLines(
  health: readonly ProvisionerHealth[],
  s: Suggester = PLAIN_SUGGESTER,
): string[] {
  return health.flatMap((h) =>
    'detail' in h
      ? [
          `${MARKS.refused.glyph} provisioner ${h.state}: ${h.detail}.`,
          `    next: ${renderSaidBare(s, h.next)}`,
        ]
      : [],
  );
}

export interface ProvisionerHealthJson {
  readonly provider: string;
  readonly machine: string;
  /** ok, none (no heartbeat), unread (machine not read), locked-out, database-down, stopped, silent, unreadable. */
  readonly state: ProvisionerHealth['state'];
  readonly healthy: boolean;
  readonly detail: string | null;
  readonly next: string | null;
  readonly next_steps: readonly NextStepJson[];
}

export function provisionerHealthJson(
  health: readonly ProvisionerHealth[],
  s: Suggester = PLAIN_SUGGESTER,
): ProvisionerHealthJson[] {
  return health.map((h) => ({
    provider: h.provider,
    machine: h.machine,
    state: h.state,
    healthy: provisionerHealthy(h),
    detail: 'detail' in h ? h.detail : null,
    next: 'next' in h ? renderSaidBare(s, h.next) : null,
    next_steps: 'next' in h ? saidSteps(s, h.next) : [],
  }));
}
