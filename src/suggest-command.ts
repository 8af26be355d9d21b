/**
 * THE ONE BUILDER of every command baton suggests ("Next: …"). A suggestion is meant to be
 * pasted as it stands, so it keeps the global flags the operator gave (--config, --deployment,
 * --state-dir, --store, and --inventory for mesh commands): a bare `baton sync` would read
 * another config and act on another state dir. And it never suggests what cannot run here:
 * without a terminal, the interactive `failover` becomes the `sync` that does the same thing.
 *
 * Modules below the composition roots (the authority, the document decoder) cannot know the
 * flags; they write commands in one canonical form — backticked, starting with `baton ` —
 * and `personalise` turns every such command into this builder's output at the edge.
 */

export interface GivenFlags {
  readonly config?: string | undefined;
  readonly deployment?: string | undefined;
  readonly stateDir?: string | undefined;
  readonly store?: string | undefined;
  readonly inventory?: string | undefined;
}

export interface Suggester {
  /** `baton` plus the global flags given, shell-quoted. */
  readonly prefix: string;
  /** --inventory as given, added to mesh commands. */
  readonly inventory: string | undefined;
  /** True when the operator has a terminal (stdin and stdout): `failover` can run. */
  readonly terminal: boolean;
}

/** For callers that have no flags (tests, the drill): plain `baton`, a terminal assumed. */
export const PLAIN_SUGGESTER: Suggester = { prefix: 'baton', inventory: undefined, terminal: true };

export function suggester(flags: GivenFlags, terminal: boolean): Suggester {
  const parts = ['baton'];
  if (flags.config) parts.push('--config', shellWord(flags.config));
  if (flags.deployment) parts.push('--deployment', shellWord(flags.deployment));
  if (flags.stateDir) parts.push('--state-dir', shellWord(flags.stateDir));
  if (flags.store) parts.push('--store', shellWord(flags.store));
  return { prefix: parts.join(' '), inventory: flags.inventory || undefined, terminal };
}

/** `args` is what follows `baton`, e.g. 'sync --push' or 'mesh rotate --consumer web1-app'. */
export function suggest(s: Suggester, args: string): string {
  const words = args.trim();
  const mesh = /^mesh\s+(plan|rotate|resume|rollback|status|seed)\b/.test(words);
  const inventory = mesh && s.inventory && !/(^|\s)--inventory(\s|=)/.test(words) ? ` --inventory ${shellWord(s.inventory)}` : '';
  return `${s.prefix} ${words}${inventory}`;
}

/**
 * The command that carries out a verdict's action: the interactive walk on a terminal, else
 * the `sync` that does the same (force needs its flag and, without a terminal, --yes).
 */
export function actionCommand(s: Suggester, action: 'first-controller' | 'adopt' | 'publish' | 'force'): string {
  if (s.terminal) return suggest(s, 'failover');
  return suggest(s, action === 'force' ? 'sync --force --yes' : 'sync');
}

const CANONICAL = /`baton ([^`]*)`/g;

/** Rewrites every backticked `baton …` in `text` through the builder. */
export function personalise(text: string, s: Suggester): string {
  if (s === PLAIN_SUGGESTER) return text;
  return text.replace(CANONICAL, (_, args: string) => {
    const words = args.trim();
    // Already built (it starts with the global flags): never prefix twice.
    if (words.startsWith('-')) return `\`baton ${args}\``;
    if (s.terminal || words !== 'failover') return `\`${suggest(s, words)}\``;
    return `\`${suggest(s, 'sync')}\``;
  });
}

/** Quotes a word for a POSIX shell only when it needs it. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
