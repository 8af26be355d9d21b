/**
 * The real ports of the failover walk: reads through status-sources (probing the lock), acts
 * through the operations `baton sync` uses — each takes ca.lock and re-decides against the
 * verdict the operator confirmed before it writes.
 */
import { adopt, firstController, force, publish, push } from '../share/actions.js';
import type { ShareContext } from '../share/share-context.js';
import type { Action, Outcome, Verdict } from '../share/types.js';
import type { FailoverPorts } from './failover-run-effect.js';
import { readStatus } from './status-report.js';
import { statusSources } from './status-sources.js';
import { assertNever } from './status-verdict.js';

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
    act(action: Exclude<Action, 'leave'>, seen: Verdict, at: Date | undefined): Promise<Outcome> {
      switch (action) {
        case 'adopt':
          return adopt(ctx, { seen });
        case 'publish':
          return publish(ctx, { seen });
        case 'first-controller':
          return firstController(ctx, { seen });
        case 'push-over':
          // Exactly `sync --push --confirm <PUBLISHED 8>`: the gate checked the value, the one
          // push re-decides under the lock against what the operator saw.
          return push(ctx, { seen });
        case 'force':
          // The gate showed ca.superseded-<stamp of `at`>: the set-aside uses that instant (and
          // only the set-aside: validity is judged by the host's own clock).
          return force(ctx, { seen, ...(at ? { at } : {}) });
        default:
          return assertNever(action);
      }
    },
  };
}
