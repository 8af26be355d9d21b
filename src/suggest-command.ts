/**
 * THE ONE BUILDER of every command baton suggests ("Next: …"). A suggestion is meant to be
 * pasted as it stands, so it keeps the global flags the operator gave (--config, --deployment,
 * --state-dir, --store, and --inventory for mesh commands): a bare `baton sync` would read
 * another config and act on another state dir. And it never suggests what cannot run here:
 * without a terminal, the interactive `failover` becomes the `sync` that does the same thing.
 *
 * Modules below the composition roots (the authority, the mesh, the document decoder) cannot
 * know the flags; they return a command as data (a NextStep, src/next-step.ts), which the
 * edge renders with these flags. Printed text is never rewritten.
 */

export interface GivenFlags {
  readonly config?: string | undefined;
  readonly deployment?: string | undefined;
  readonly stateDir?: string | undefined;
  readonly store?: string | undefined;
  readonly sealKeyFile?: string | undefined;
  /** false when --no-seal was given (commander's negated option). */
  readonly seal?: boolean | undefined;
  readonly inventory?: string | undefined;
  /**
   * Flags whose value was refused (a malformed --deployment): the suggestion carries a
   * placeholder for them. Repeating the value just refused makes a Next that fails the same way.
   */
  readonly refused?: readonly 'deployment'[] | undefined;
  /** The mesh flags the operator typed (not their defaults): kept on every mesh command suggested. */
  readonly mesh?: MeshFlagsGiven | undefined;
}

/**
 * `--timeout`, `--concurrency` and `--wait` as the operator gave them. A suggestion that drops
 * them runs the next step with the defaults the operator had just overridden: a slow machine's
 * `--timeout 60` became 15 again, and the same step timed out again (issue 45).
 */
export interface MeshFlagsGiven {
  readonly timeout?: string;
  readonly concurrency?: string;
  readonly wait?: string;
}

/** What a suggestion says in place of a refused flag's value. */
export const REFUSED_PLACEHOLDER = { deployment: '<DEPLOYMENT ID>' } as const;

export interface Suggester {
  /** `baton` plus the global flags given, shell-quoted. */
  readonly prefix: string;
  /** The same without --state-dir: for a command to run on another host, whose state dir is its own. */
  readonly prefixElsewhere?: string;
  /**
   * The global flags of `prefix` as argv words, unquoted (and of `prefixElsewhere`): JSON's
   * `next_steps[].args` start with them, so a script that runs `baton` with `args` runs exactly
   * the command printed — the same state dir, config and deployment. Absent: none given.
   */
  readonly prefixArgs?: readonly string[];
  readonly prefixElsewhereArgs?: readonly string[];
  /** --inventory as given, added to mesh commands. */
  readonly inventory: string | undefined;
  /** True when the operator has a terminal (stdin and stdout): `failover` can run. */
  readonly terminal: boolean;
  /** The mesh flags given, added to the mesh commands that take each (src/next-step.ts). */
  readonly mesh?: MeshFlagsGiven;
}

/** For callers that have no flags (tests, the drill): plain `baton`, a terminal assumed. */
export const PLAIN_SUGGESTER: Suggester = { prefix: 'baton', inventory: undefined, terminal: true };

export function suggester(flags: GivenFlags, terminal: boolean): Suggester {
  const words = (withStateDir: boolean) => {
    const parts: string[] = [];
    if (flags.config) parts.push('--config', flags.config);
    const refused = flags.refused?.includes('deployment') === true;
    if (flags.deployment)
      parts.push('--deployment', refused ? REFUSED_PLACEHOLDER.deployment : flags.deployment);
    if (flags.stateDir && withStateDir) parts.push('--state-dir', flags.stateDir);
    if (flags.store) parts.push('--store', flags.store);
    // The seal key file is a path on this host, like --state-dir; --no-seal states the deployment's choice.
    if (flags.sealKeyFile && withStateDir) parts.push('--seal-key-file', flags.sealKeyFile);
    if (flags.seal === false) parts.push('--no-seal');
    return parts;
  };
  // The placeholder is shown as it is (quoted, it would read as a value to paste).
  const shown = (w: string) => (w === REFUSED_PLACEHOLDER.deployment ? w : shellWord(w));
  const build = (withStateDir: boolean) => ['baton', ...words(withStateDir).map(shown)].join(' ');
  return {
    prefix: build(true),
    prefixElsewhere: build(false),
    prefixArgs: words(true),
    prefixElsewhereArgs: words(false),
    inventory: flags.inventory || undefined,
    terminal,
    ...(flags.mesh ? { mesh: flags.mesh } : {}),
  };
}

/** `args` is what follows `baton`, e.g. 'sync --push' or 'mesh rotate --consumer web1-app'. */
export function suggest(s: Suggester, args: string): string {
  const words = args.trim();
  const mesh = /^mesh\s+(plan|rotate|resume|rollback|status|seed)\b/.test(words);
  const inventory =
    mesh && s.inventory && !/(^|\s)--inventory(\s|=)/.test(words)
      ? ` --inventory ${shellWord(s.inventory)}`
      : '';
  return `${s.prefix} ${words}${inventory}`;
}

/**
 * The command that carries out a verdict's plain action (adopt, publish): the interactive walk
 * on a terminal, else the `sync` that does the same. A step that mints or replaces an
 * authority is never one of these: it is a NextStep with its bound value as a placeholder
 * (src/next-step.ts, src/share/verdict-words.ts).
 */
export function actionCommand(s: Suggester, action: 'adopt' | 'publish'): string {
  void action;
  return suggest(s, s.terminal ? 'failover' : 'sync');
}

/** Quotes a word for a POSIX shell only when it needs it. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
