/**
 * The real ports of the failover walk: reads through status-sources (probing the lock), and each
 * action the operator confirms through the ONE step of that action (share-action.ts), the step
 * `baton sync` and `ca init` run — it takes ca.lock and re-decides against the verdict the
 * operator confirmed before it writes. Built here, not in src/app, since src/app does no I/O:
 * the walk is handed these ports.
 */
import type { FailoverPorts } from '../app/failover-run-effect.js';
import { readStatus } from '../app/status-report.js';
import { statusSources } from '../app/status-sources.js';
import type { ShareContext } from '../share/share-context.js';
import { actionRequest, runAction, type MintGate } from './share-action.js';

/**
 * The walk's mint gate has been passed before its act exists: the confirming screen asked for
 * the deployment id typed (src/app/typed-gate.ts deploymentRefusal, the check `sync` and
 * `ca init` make on a terminal), and it shows no neighbours, so the store is not asked for them.
 */
const ASKED_ON_THE_SCREEN: MintGate = { confirmMint: async () => {} };

export function failoverPorts(
  ctx: ShareContext,
  storeUrl: string,
  sealKeyFile: string | undefined,
): FailoverPorts {
  const sources = statusSources(
    { deployment: ctx.deployment, stateDir: ctx.stateDir, storeUrl, store: ctx.store, sealKeyFile },
    { probeLock: true },
  );
  return {
    read: () => readStatus(sources),
    // Force's and push-over's values were checked by the walk's typed gates, from the same
    // Bindings `sync --confirm` checks (src/share/confirm-binding.ts; failover-flow.ts BOUND_GATES).
    act: (action, seen, at) => runAction(ctx, actionRequest(action, seen, at), ASKED_ON_THE_SCREEN),
  };
}
