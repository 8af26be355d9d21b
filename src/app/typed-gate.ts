/**
 * The typed gates in front of every step that cannot be undone (docs/cli.md, "Terminals" and "Screens and keys"):
 * what the operator must type, and — when Enter is pressed on something else — WHY it was not
 * accepted. A silent refusal at 3 a.m. reads as a broken key; a reason names what to type.
 */
import { confirmationPrefix, typedMatch, type Fingerprint } from '../pki/fingerprint-type.js';
import type { Action, Verdict } from '../share/types.js';

/** How many characters of the deployment id a mint or an adopt over a loss asks for. */
export const DEPLOYMENT_PREFIX_LENGTH = 8;

/** The first 8 characters of the deployment id (the whole id when it is shorter). */
export function deploymentPrefix(deployment: string): string {
  return deployment.slice(0, DEPLOYMENT_PREFIX_LENGTH);
}

/**
 * Whether an action of the walk cannot be undone and so sits behind typing: minting a first
 * authority (a second one, on a typo'd store, would split the fleet) and adopting over the
 * lost marker (this host held an authority; what it held is gone for good). Force and
 * push-over have their own gates (the LOCAL and the PUBLISHED fingerprint). Such an action is
 * never the default selection.
 */
export function needsDeploymentGate(action: Action, verdict: Verdict): boolean {
  if (action === 'first-controller') return true;
  return action === 'adopt' && verdict.kind === 'adopt' && verdict.lostMarker;
}

/** An action that is never where the cursor starts. */
export function isIrreversible(action: Action, verdict: Verdict): boolean {
  return action === 'force' || action === 'push-over' || needsDeploymentGate(action, verdict);
}

/**
 * The mint gate's question. IT NEVER SHOWS THE ANSWER: an id printed beside the field is copied,
 * not recalled, and on a mistyped store the operator's own knowledge of the deployment is the
 * last thing that can notice it (the console once printed the 8 characters it asked for).
 */
export function mintGateQuestion(length: number): string {
  return `Type the first ${length} characters of the deployment id (from baton.yaml or --deployment; not shown here), then Enter:`;
}

/** Why a typed deployment prefix was not accepted, or undefined when it matches. */
export function deploymentRefusal(typed: string, deployment: string): string | undefined {
  const expected = deploymentPrefix(deployment);
  const match = typedMatch(typed, expected);
  if (match === 'match') return undefined;
  if (typed.trim() === '') return `Type the first ${expected.length} characters of the deployment id first.`;
  if (match === 'wrong-case') return wrongCase(typed, 'the deployment id');
  return `"${typed.trim()}" is not the first ${expected.length} characters of the deployment id: ${whatDiffers(typed.trim(), expected)}.`;
}

/**
 * What differs between a typed value and the expected one: the count when it is not the same,
 * else which positions (1-based). "Expected 8 characters, you typed 8" said nothing.
 */
export function whatDiffers(typed: string, expected: string): string {
  const got = [...typed];
  const want = [...expected];
  if (got.length !== want.length) return `expected ${want.length} characters, you typed ${got.length}`;
  const at = want.flatMap((c, i) => (got[i] === c ? [] : [i + 1]));
  const list = at.length === 1 ? `${at[0]}` : `${at.slice(0, -1).join(', ')} and ${at[at.length - 1]!}`;
  return `the right number of characters, but character${at.length === 1 ? '' : 's'} ${list} ${at.length === 1 ? 'differs' : 'differ'}`;
}

/**
 * Why a typed force prefix was not accepted, or undefined when it is the LOCAL one. Typing the
 * PUBLISHED prefix is the mistake the first tester made (it was the one in red): say so.
 */
export function forceRefusal(typed: string, local: Fingerprint, published: Fingerprint): string | undefined {
  return sideRefusal(
    typed,
    { side: 'LOCAL', fingerprint: local },
    published,
    'the authority being set aside',
  );
}

/**
 * Why a typed push-over value was not accepted, or undefined when it is the PUBLISHED prefix —
 * the value `sync --push --confirm` takes (confirm-binding.ts). The LOCAL one is the mistake the
 * force gate teaches (it asks for LOCAL): say so.
 */
export function pushRefusal(typed: string, local: Fingerprint, published: Fingerprint): string | undefined {
  return sideRefusal(
    typed,
    { side: 'PUBLISHED', fingerprint: published },
    local,
    'the authority replaced in the store',
  );
}

/** A gate bound to one side's fingerprint: the refusal names what differs, and the other side when typed. */
function sideRefusal(
  typed: string,
  want: { readonly side: 'LOCAL' | 'PUBLISHED'; readonly fingerprint: Fingerprint },
  other: Fingerprint,
  role: string,
): string | undefined {
  const expected = confirmationPrefix(want.fingerprint);
  const match = typedMatch(typed, expected);
  if (match === 'match') return undefined;
  if (typed.trim() === '') return `Type the 8 characters marked "type these" (${want.side}) first.`;
  if (match === 'wrong-case') return wrongCase(typed, `the ${want.side} fingerprint`);
  if (typedMatch(typed, confirmationPrefix(other)) !== 'different') {
    const otherSide = want.side === 'LOCAL' ? 'PUBLISHED' : 'LOCAL';
    return `That is the ${otherSide} fingerprint. Type the ${want.side} one: ${role}.`;
  }
  const n = typed.replace(/\s+/g, '').length;
  if (n !== expected.length)
    return `Expected ${expected.length} characters, you typed ${n}: the first 8 after SHA256: of the ${want.side} fingerprint.`;
  return `"${typed.trim()}" does not match the ${want.side} fingerprint: ${whatDiffers(typed.replace(/\s+/g, ''), expected)}; compare it with the 8 characters marked "type these".`;
}

/** The refusal of the right characters in the wrong case: the one mistake "does not match" would hide. */
export function wrongCase(typed: string, what: string): string {
  return `"${typed.trim()}" has the same letters as ${what} but not the same case. Case counts (base64): type the characters exactly as shown.`;
}

/** How every line-by-line dialogue says a typed entry was refused: the drill counts these as wrong turns. */
export const NOT_ACCEPTED = 'not accepted: ';

/** Why a typed count at the rotation gate was not accepted, or undefined when it matches. */
export function countRefusal(typed: string, expected: string): string | undefined {
  if (typed.trim() === expected) return undefined;
  if (typed.trim() === '') return `Type ${expected} (the number of credentials) first.`;
  return `Expected ${expected}, you typed ${typed.trim()}: type the number of credentials to rotate.`;
}
