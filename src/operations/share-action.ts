/**
 * EACH ACTION ON THE AUTHORITY IS ONE STEP, whoever chose it: `baton sync` (the table's answer
 * and its flags), `ca init` with a store (the first controller), and the failover walk (the
 * operator's choice on a screen) all run the step here, so adopt, publish, first controller,
 * push over and force each exist once. A second mapping (the walk's own, as it once had) is where
 * a guard one caller keeps and another skips would creep in.
 *
 * The step itself re-decides under ca.lock (src/share/actions.ts). `seen` is the look the
 * operator CONFIRMED — a screen's choice, or a value bound with --confirm: a different verdict
 * under the lock is refused, naming what moved. Plain `sync`'s adopt and publish carry none: no
 * one confirmed a look there, and the table's answer under the lock is what was asked for.
 */
import { adopt, firstController, force, publish, push, replaceUnreadable } from '../share/actions.js';
import { neighbourWords } from '../share/neighbours.js';
import type { ShareContext } from '../share/share-context.js';
import type { Action, Outcome, Verdict } from '../share/types.js';

export type RefuseVerdict = Extract<Verdict, { kind: 'refuse' }>;

/** What the caller chose, on which look. */
export type ActionRequest =
  | { readonly action: 'adopt' | 'publish'; readonly seen?: Verdict }
  /** Minting when `seen` is the empty store and fresh host; adopting the winner when one published first. */
  | { readonly action: 'first-controller'; readonly seen: Verdict }
  /** Its value (the PUBLISHED 8, when it pushes over) already checked by the caller's gate. */
  | { readonly action: 'push-over'; readonly seen: Verdict; readonly unseal?: boolean }
  /** Its LOCAL 8 already checked; `at` is the set-aside stamp the gate showed. */
  | { readonly action: 'force'; readonly seen: Verdict; readonly at?: Date }
  /** `sync --replace-unreadable` (its ETAG 8 already checked): the way out of a document that cannot be used. */
  | { readonly action: 'replace-unreadable'; readonly seen: Verdict; readonly unseal?: boolean };

/**
 * MINTING IS SAID, NEVER INFERRED: the gate in front of a first authority (the typed deployment
 * id, or --yes without a terminal). `note` names documents at neighbouring prefixes (a mistyped
 * --store looks like an empty one); it reads the store, so only a gate that shows it calls it.
 */
export interface MintGate {
  confirmMint(note: () => Promise<string>): Promise<void>;
}

export async function runAction(
  share: ShareContext,
  request: ActionRequest,
  gate: MintGate,
): Promise<Outcome> {
  switch (request.action) {
    case 'adopt':
      return adopt(share, request.seen ? { seen: request.seen } : {});
    case 'publish':
      return publish(share, request.seen ? { seen: request.seen } : {});
    case 'first-controller':
      // Another controller published first (a look that says adopt): no mint, so nothing to say.
      if (request.seen.kind === 'first-controller')
        await gate.confirmMint(() => neighbourWords(share.store, share.deployment));
      return firstController(share, { seen: request.seen });
    case 'push-over':
      // The push that re-decides under the lock against what was seen: over the published
      // document only when this host is not proved behind it.
      return push(share, { seen: request.seen, unseal: Boolean(request.unseal) });
    case 'force':
      // The set-aside uses the stamp the gate showed (and only the set-aside: validity is judged
      // by the host's own clock).
      return force(share, { seen: request.seen, ...(request.at ? { at: request.at } : {}) });
    case 'replace-unreadable':
      return replaceUnreadable(share, { seen: request.seen, unseal: Boolean(request.unseal) });
  }
}

/** The walk's actions that write, each as its request (the walk's `leave` writes nothing and is not one). */
export function actionRequest(
  action: Exclude<Action, 'leave'>,
  seen: Verdict,
  at: Date | undefined,
): ActionRequest {
  return action === 'force' ? { action, seen, ...(at ? { at } : {}) } : { action, seen };
}
