/**
 * A switch back from alternating to single ends with `retire`: the logins' files (`R+a`,
 * `R+b`) leave the provider, and the provisioner then sets both logins NOLOGIN
 * (src/provisioner/switched-back-logins.ts). A baton killed between the consumer's commit and
 * that retire leaves both files delivered beside the plain `R` while the consumer reads the bare
 * secret: the provisioner keeps both logins LOGIN — a back door — and nothing else says so.
 * This reads that state from the machines alone (the consumer file's format, the files beside
 * `R`, the provider's intent), so status, rotate and resume all see it, whoever's journal it is.
 */
import type { FileDigests } from './transport.js';
import type { PlannedPair } from './rotation-plan.js';

/**
 * The login files a switch back of this (settled) pair left behind, or undefined when it has
 * none: a single pair whose consumer holds the bare secret, nothing staged on either end, and
 * a login file still live beside the plain one. A consumer still on a login (`leaves`) is a
 * switch a rotation has yet to make, not one cut short.
 */
export function switchBackLeftBehind(
  pair: PlannedPair,
  provider: FileDigests | undefined,
  consumer: FileDigests | undefined,
): readonly string[] | undefined {
  if (pair.credential === 'alternating' || pair.retire === undefined || pair.retire.length === 0)
    return undefined;
  if (pair.leaves !== undefined || consumer?.live === undefined || consumer.liveLogin !== undefined)
    return undefined;
  if (consumer.next !== undefined || provider?.live === undefined || provider.next !== undefined)
    return undefined;
  return pair.retire;
}

/** The leftover's words: which files are still delivered, and what that leaves open. */
export function switchBackWhat(pair: PlannedPair, files: readonly string[]): string {
  return `${pair.providerMachine} still delivers ${files.map((f) => f.slice(f.lastIndexOf('/') + 1)).join(' and ')} beside ${pair.role}: the switch back to single did not finish, and ${files.length === 1 ? 'that login still logs in' : 'those logins still log in'}`;
}
