/**
 * AN IRREVERSIBLE STEP IS BOUND TO THE DATA, NOT TO --yes. Setting this host's authority aside,
 * publishing over an authority this host is not proved ahead of, replacing a document that
 * cannot be used and unsealing each take a value only someone who READ the two sides can give:
 * the terminal gate asks for it typed, and without a terminal `--confirm VALUE` carries it.
 *
 *   --force                 the 8 characters after `SHA256:` of the LOCAL fingerprint
 *   --push over a document  the same of the PUBLISHED fingerprint
 *   --replace-unreadable    the first 8 characters of the bad object's ETag (status shows it)
 *   --unseal                the word `unseal`
 *
 * Compared exactly (case-sensitive: a fingerprint is base64). A suggested command never holds
 * the value, only a placeholder and where to read it (src/next-step.ts), so pasting advice can
 * never carry out the step. Any other bound step (e.g. writing to a store known not to enforce
 * conditional writes) adds a Binding here and is checked by the same function.
 */
import { BatonError } from '../errors.js';
import { ETAG_8, forceAgainStep, nextStep, type Placeholder } from '../next-step.js';
import { confirmationPrefix, typedMatch, type Fingerprint } from '../pki/fingerprint-type.js';

export type BoundStep = 'force' | 'push-over' | 'replace-unreadable' | 'unseal';

export interface Binding {
  readonly step: BoundStep;
  /** The flag whose step this is, for messages: '--force'. */
  readonly flag: string;
  /** The exact value --confirm must carry (never printed in a suggestion). */
  readonly expected: string;
  /** What a suggestion shows instead of the value, and where to read it. */
  readonly placeholder: Placeholder;
  /** The value as a noun phrase, for a refusal. */
  readonly describe: string;
  /** The terminal gate's question. */
  readonly prompt: string;
}

// Where to read each value, said without a command: it is printed beside the panels that show
// it, and a refusal adds the status command itself (with the global flags given).
const STATUS_LOCAL = 'the 8 characters after "SHA256:" of the LOCAL fingerprint status shows';
const STATUS_PUBLISHED = 'the 8 characters after "SHA256:" of the PUBLISHED fingerprint status shows';

export function forceBinding(local: Fingerprint): Binding {
  return {
    step: 'force',
    flag: '--force',
    expected: confirmationPrefix(local),
    placeholder: { placeholder: 'LOCAL 8', readFrom: STATUS_LOCAL },
    describe: 'the 8 characters after "SHA256:" of the LOCAL fingerprint (the authority set aside)',
    prompt: 'Type the first 8 characters after "SHA256:" of the LOCAL fingerprint to set it aside: ',
  };
}

/**
 * `--force` run again to finish a force cut short: the same flag and the same LOCAL 8 as typed
 * before the cut, now read from the authority it set aside (it is no longer in ca/).
 */
export function forceResumeBinding(setAside: Fingerprint, setAsideDir: string): Binding {
  const step = forceAgainStep(setAsideDir);
  const placeholder = step.args.find((w): w is Placeholder => typeof w !== 'string')!;
  return {
    step: 'force',
    flag: '--force',
    expected: confirmationPrefix(setAside),
    placeholder,
    describe: `the 8 characters after "SHA256:" of the authority the cut-short force set aside in ${setAsideDir} (the LOCAL 8 it was run with)`,
    prompt: `A sync --force stopped part-way; it set ${setAside} aside in ${setAsideDir}. Type the first 8 characters after "SHA256:" of that fingerprint to finish it: `,
  };
}

export function pushOverBinding(published: Fingerprint): Binding {
  return {
    step: 'push-over',
    flag: '--push',
    expected: confirmationPrefix(published),
    placeholder: { placeholder: 'PUBLISHED 8', readFrom: STATUS_PUBLISHED },
    describe:
      'the 8 characters after "SHA256:" of the PUBLISHED fingerprint (the authority replaced in the store)',
    prompt: 'Type the first 8 characters after "SHA256:" of the PUBLISHED fingerprint to publish over it: ',
  };
}

/** The ETag without quotes or a weak marker: what status shows, and what is typed. */
export function etagShown(etag: string): string {
  return etag.replace(/^W\//, '').replace(/"/g, '');
}

export function replaceBinding(etag: string): Binding {
  return {
    step: 'replace-unreadable',
    flag: '--replace-unreadable',
    expected: etagShown(etag).slice(0, 8),
    placeholder: ETAG_8,
    describe: "the first 8 characters of the bad object's ETag (the etag row of the PUBLISHED panel)",
    prompt: "Type the first 8 characters of the bad object's ETag to replace it: ",
  };
}

export const UNSEAL_BINDING: Binding = {
  step: 'unseal',
  flag: '--unseal',
  expected: 'unseal',
  placeholder: {
    placeholder: 'the word unseal',
    readFrom: 'the word itself: type it only if the document should stop being sealed',
  },
  describe: 'the word "unseal"',
  prompt: 'Type "unseal" to publish without the seal: ',
};

/**
 * Exit 2 unless every binding's value is among `given` and every value given belongs to one.
 * The refusal names the flag, what was expected and where to read it — never the value.
 */
export function checkConfirmations(
  bindings: readonly Binding[],
  given: readonly string[],
  where: string,
): void {
  const missing = bindings.filter((b) => !given.includes(b.expected));
  const stray = given.filter((value) => !bindings.some((b) => b.expected === value));
  if (missing.length === 0 && stray.length === 0) return;
  if (bindings.length === 0) {
    throw new BatonError('usage', {
      what: '--confirm applies only with --force, --push over a document this host is not proved ahead of, --replace-unreadable or --unseal; none of these is asked for here.',
      where,
      changed: 'Nothing was written.',
      next: ['Leave --confirm out (run ', nextStep('status'), ' to see what applies).'],
    });
  }
  const needs = bindings.map((b) => `${b.flag} needs --confirm with ${b.describe}`).join('; ');
  // The right characters in the wrong case is the one mistake a bare "does not match" would hide.
  const caseOnly = given.some((value) =>
    bindings.some((b) => typedMatch(value, b.expected) === 'wrong-case'),
  );
  const said =
    given.length === 0
      ? 'No --confirm was given.'
      : caseOnly
        ? 'The --confirm given has the right characters but not the same case: case counts (base64), give them exactly as shown.'
        : 'The --confirm given does not match.';
  throw new BatonError('usage', {
    what: `${needs}. ${said}`,
    where,
    changed: 'Nothing was written.',
    next: [
      `Read ${bindings.map((b) => b.placeholder.readFrom).join(', and ')} (`,
      nextStep('status'),
      '); then run the command again with --confirm and that value (one --confirm per step).',
    ],
  });
}
