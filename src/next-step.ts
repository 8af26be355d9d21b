/**
 * A suggested command as DATA: the words after `baton`, the placeholders the operator fills in
 * (never the value a gate is bound to), and the host it must run on when that is not this one.
 * The domain builds a NextStep; only the edge renders it — once, with the global flags given,
 * quoted for a shell on a terminal or in plain text, and as an object in JSON.
 *
 * A placeholder renders unquoted as `<LOCAL 8>`: pasted into a shell as printed, `<` and `>`
 * are redirections with nothing sensible after them, so the command does not run at all — a
 * bound step can never be carried out by pasting a suggestion.
 */
import { shellWord, type Suggester } from './suggest-command.js';

export interface Placeholder {
  /** What to type instead, e.g. 'LOCAL 8'. Rendered as `<LOCAL 8>`. */
  readonly placeholder: string;
  /** Where the operator reads the value, in one sentence. */
  readonly readFrom: string;
}

export type StepWord = string | Placeholder;

/** The bad object's ETag, which `sync --replace-unreadable` is bound to (src/share/confirm-binding.ts). */
export const ETAG_8: Placeholder = {
  placeholder: 'ETAG 8',
  readFrom: 'the first 8 characters of the etag in the PUBLISHED panel status shows',
};

/** The previous authority's fingerprint, which `ca retire` is bound to (it deletes that key). */
export const PREVIOUS_8: Placeholder = {
  placeholder: 'PREVIOUS 8',
  readFrom: 'the 8 characters after "SHA256:" of the previous fingerprint `ca show` (or status) shows',
};

/**
 * `ca retire`, bound: deleting the previous key cannot be undone, so a suggestion carries the
 * placeholder and never a command that runs as pasted.
 */
export function retireStep(): NextStep {
  return nextStep('ca retire --confirm', { placeholders: [PREVIOUS_8] });
}

/**
 * `sync --force` re-run as typed, to finish a force that stopped part-way: bound, like the
 * force itself, to the authority it set aside — which now sits in `setAsideDir`, not in ca/.
 */
export function forceAgainStep(setAsideDir: string): NextStep {
  return nextStep('sync --force --confirm', {
    placeholders: [
      {
        placeholder: 'LOCAL 8',
        readFrom: `the 8 characters after "SHA256:" of the fingerprint of the authority set aside in ${setAsideDir}, named here`,
      },
    ],
  });
}

/** `sync --replace-unreadable`, run where the authority is held (this host may hold none). */
export function replaceElsewhere(): NextStep {
  return nextStep('sync --replace-unreadable --confirm', {
    placeholders: [ETAG_8],
    host: "a controller that holds this deployment's authority",
  });
}

export interface NextStep {
  /** The words after `baton` and its global flags, e.g. ['sync', '--force', '--confirm', {placeholder}]. */
  readonly args: readonly StepWord[];
  /**
   * Set when the command must run on another host (e.g. "a controller that holds this
   * deployment's authority"): rendered without this host's --state-dir, naming that host.
   */
  readonly host?: string;
}

/** `words` is split on spaces (no word of a baton subcommand holds one); placeholders go last. */
export function nextStep(
  words: string,
  options: { readonly placeholders?: readonly Placeholder[]; readonly host?: string } = {},
): NextStep {
  const args: StepWord[] = words.trim().split(/\s+/).filter(Boolean);
  args.push(...(options.placeholders ?? []));
  return options.host ? { args, host: options.host } : { args };
}

export function isPlaceholder(word: StepWord): word is Placeholder {
  return typeof word !== 'string';
}

/** The placeholders of a step, for the sentence that says where to read each value. */
export function placeholdersOf(step: NextStep): readonly Placeholder[] {
  return step.args.filter(isPlaceholder);
}

/**
 * The command as an operator pastes it: `baton`, the global flags given (without --state-dir
 * when it runs on another host), the words shell-quoted, placeholders as `<…>`, and --inventory
 * on the mesh commands that take it.
 */
export function renderStep(s: Suggester, step: NextStep): string {
  const words = withInventory(s, step).map((w) => (isPlaceholder(w) ? `<${w.placeholder}>` : shellWord(w)));
  const prefix = step.host ? (s.prefixElsewhere ?? s.prefix) : s.prefix;
  return `${prefix} ${words.join(' ')}`;
}

/**
 * The step's words with the --inventory given, on the mesh commands that take it: the same for
 * the pasted command and JSON's `args`, so a script running `args` reads the same inventory.
 */
function withInventory(s: Suggester, step: NextStep): readonly StepWord[] {
  const mesh =
    step.args[0] === 'mesh' &&
    typeof step.args[1] === 'string' &&
    /^(plan|rotate|resume|rollback|status|seed)$/.test(step.args[1]);
  if (!mesh) return step.args;
  const out = [...step.args];
  if (s.inventory && !step.args.includes('--inventory')) out.push('--inventory', s.inventory);
  for (const [flag, value] of meshFlagsFor(s, step.args[1] as string))
    if (!step.args.includes(flag)) out.push(flag, value);
  return out;
}

/** Which of the mesh flags given each mesh command takes (src/commands/mesh.ts). */
const TAKES: Readonly<Record<string, readonly ('timeout' | 'concurrency' | 'wait')[]>> = {
  plan: ['concurrency', 'timeout'],
  status: ['concurrency', 'timeout'],
  rotate: ['concurrency', 'timeout', 'wait'],
  resume: ['concurrency', 'timeout', 'wait'],
  rollback: ['concurrency', 'timeout', 'wait'],
  seed: ['timeout'],
};

function meshFlagsFor(s: Suggester, command: string): [string, string][] {
  const given = s.mesh;
  if (!given) return [];
  return (TAKES[command] ?? []).flatMap((name): [string, string][] => {
    const value = given[name];
    return value === undefined ? [] : [[`--${name}`, value]];
  });
}

/** The command with where to read each placeholder and, for another host, which host. */
export function renderStepSentence(s: Suggester, step: NextStep): string {
  const command = renderStep(s, step);
  const where = step.host ? ` (run it on ${step.host})` : '';
  const reads = placeholdersOf(step).map((p) => ` <${p.placeholder}>: ${p.readFrom}`);
  return `${command}${where}${reads.length > 0 ? `;${reads.join(';')}` : ''}`;
}

/**
 * A sentence that names commands: text and steps in order, e.g.
 * `['Publish it with ', nextStep('sync --push'), '.']`. A BatonError's `next` may be one, so the
 * edge renders its commands with the global flags given instead of rewriting printed text.
 */
export type Said = readonly (string | NextStep)[];

export function isNextStep(part: string | NextStep): part is NextStep {
  return typeof part !== 'string';
}

/** The sentence with each command rendered for this operator, in backticks inside prose. */
export function renderSaid(s: Suggester, said: Said): string {
  return said
    .map((part) =>
      isNextStep(part) ? `\`${renderStep(s, part)}\`${part.host ? ` (on ${part.host})` : ''}` : part,
    )
    .join('');
}

/**
 * The sentence with its commands bare, for a line that is itself the answer (a `next:` row of
 * `mesh status`, a rotation's last line): the command runs to the end of its clause.
 */
export function renderSaidBare(s: Suggester, said: Said): string {
  return said.map((part) => (isNextStep(part) ? renderStep(s, part) : part)).join('');
}

/** The same with plain `baton`: what `BatonError.next` holds, for logs and tests. */
export function saidText(said: Said): string {
  return renderSaid(
    { prefix: 'baton', prefixElsewhere: 'baton', inventory: undefined, terminal: true },
    said,
  );
}

/** Every step a sentence names, as JSON objects. */
export function saidSteps(s: Suggester, said: Said): readonly NextStepJson[] {
  return said.filter(isNextStep).map((step) => stepJson(s, step));
}

export interface NextStepJson {
  /** The command as rendered (placeholders as `<…>`). */
  readonly command: string;
  /**
   * argv after `baton`: the global flags given, then the command's words (with --inventory on a
   * mesh command), exactly the words `command` renders; a placeholder is `<NAME>`.
   */
  readonly args: readonly string[];
  readonly placeholders: readonly { readonly name: string; readonly read_from: string }[];
  readonly host: string | null;
}

export function stepJson(s: Suggester, step: NextStep): NextStepJson {
  return {
    command: renderStep(s, step),
    args: [
      ...((step.host ? (s.prefixElsewhereArgs ?? s.prefixArgs) : s.prefixArgs) ?? []),
      ...withInventory(s, step).map((w) => (isPlaceholder(w) ? `<${w.placeholder}>` : w)),
    ],
    placeholders: placeholdersOf(step).map((p) => ({ name: p.placeholder, read_from: p.readFrom })),
    host: step.host ?? null,
  };
}
