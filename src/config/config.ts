import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BatonError } from '../errors.js';

/**
 * A deployment id goes into a directory name, a certificate's O and an S3 key: a closed
 * alphabet keeps it from ever meaning a path or a second RDN.
 */
export const DEPLOYMENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const FileSchema = z
  .object({
    deployment: z.string().regex(DEPLOYMENT_ID, 'letters, digits, ".", "_" or "-", at most 64').optional(),
    state_dir: z.string().min(1).optional(),
    store: z.string().min(1).optional(),
    seal_key_file: z.string().min(1).optional(),
    inventory: z.string().min(1).optional(),
    journal_dir: z.string().min(1).optional(),
  })
  .strict();

export type ConfigFile = z.infer<typeof FileSchema>;

/** The global flags of DESIGN.md §8, as commander hands them over. */
export interface GlobalFlags {
  readonly config?: string;
  readonly deployment?: string;
  readonly stateDir?: string;
  readonly store?: string;
  readonly color?: boolean;
}

export interface ResolvedConfig {
  /** The config file that was read, or undefined when none was found. */
  readonly source: string | undefined;
  readonly deployment: string | undefined;
  /** Explicit state dir; `stateDirFor` derives the default from the deployment. */
  readonly stateDir: string | undefined;
  readonly store: string | undefined;
  readonly sealKeyFile: string | undefined;
  readonly inventory: string | undefined;
  readonly journalDir: string | undefined;
  /** True when colour must not be used (flag, NO_COLOR, TERM=dumb). */
  readonly noColor: boolean;
}

export const DEFAULT_STATE_ROOT = '/var/lib/baton';

/**
 * The config search order of DESIGN.md §8. An explicitly named file (flag or $BATON_CONFIG)
 * must exist; the implicit locations are optional.
 */
export function configCandidates(flags: GlobalFlags, env: NodeJS.ProcessEnv, cwd: string): {
  readonly explicit: string | undefined;
  readonly implicit: readonly string[];
} {
  const explicit = flags.config ?? (env.BATON_CONFIG ? env.BATON_CONFIG : undefined);
  const xdg = env.XDG_CONFIG_HOME ?? (env.HOME ? path.join(env.HOME, '.config') : undefined);
  const implicit = [
    path.join(cwd, 'baton.yaml'),
    ...(xdg ? [path.join(xdg, 'baton', 'baton.yaml')] : []),
    '/etc/baton/baton.yaml',
  ];
  return { explicit: explicit ? path.resolve(cwd, explicit) : undefined, implicit };
}

export function loadConfig(
  flags: GlobalFlags,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): ResolvedConfig {
  const { explicit, implicit } = configCandidates(flags, env, cwd);
  let source: string | undefined;
  if (explicit) {
    if (!existsSync(explicit)) {
      throw new BatonError('config', {
        what: 'The config file named on the command line (or in $BATON_CONFIG) does not exist.',
        where: explicit,
        next: 'Check the path, or leave out --config to use the default search order.',
      });
    }
    source = explicit;
  } else {
    source = implicit.find((candidate) => existsSync(candidate));
  }
  const file = source ? readConfigFile(source) : {};
  const relative = (p: string | undefined) => (p && source ? path.resolve(path.dirname(source), p) : p);

  if (flags.deployment !== undefined && !DEPLOYMENT_ID.test(flags.deployment)) {
    throw new BatonError('usage', {
      what: `--deployment "${flags.deployment}" is not a valid deployment id (letters, digits, ".", "_" or "-", at most 64).`,
      next: 'Pass the id your fleet was created with, e.g. 32 hex characters.',
    });
  }
  const noColor =
    flags.color === false || env.NO_COLOR !== undefined && env.NO_COLOR !== '' || env.TERM === 'dumb';
  return {
    source,
    deployment: flags.deployment ?? file.deployment,
    stateDir: flags.stateDir ? path.resolve(cwd, flags.stateDir) : relative(file.state_dir),
    store: flags.store ?? file.store,
    sealKeyFile: relative(file.seal_key_file),
    inventory: relative(file.inventory),
    journalDir: relative(file.journal_dir),
    noColor,
  };
}

export function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new BatonError('config', {
      what: `The config file could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`,
      where: file,
      next: 'Check its permissions, or point --config at another file.',
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (error) {
    throw new BatonError('config', {
      what: `The config file is not valid YAML: ${(error as Error).message.split('\n')[0]}`,
      where: file,
      next: 'Fix the syntax; baton changed nothing.',
      cause: error,
    });
  }
  const parsed = FileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(top level)');
    const what =
      issue.code === 'unrecognized_keys'
        ? `Unknown config field "${issue.keys.join('", "')}".`
        : `Config field "${field}" is invalid: ${issue.message}.`;
    throw new BatonError('config', {
      what,
      where: file,
      next: 'Known fields: deployment, state_dir, store, seal_key_file, inventory, journal_dir.',
    });
  }
  return parsed.data;
}

/** The deployment id, or a usage error that says where to set it. */
export function requireDeployment(config: ResolvedConfig): string {
  if (config.deployment) return config.deployment;
  throw new BatonError('usage', {
    what: 'No deployment id is set.',
    where: config.source ?? 'no config file found',
    next: 'Pass --deployment ID or set "deployment:" in baton.yaml.',
  });
}

/** The state dir: explicit, else /var/lib/baton/<deployment>. */
export function stateDirFor(config: ResolvedConfig): string {
  return config.stateDir ?? path.join(DEFAULT_STATE_ROOT, requireDeployment(config));
}

/** The store URL, or a usage error that says where to set it. */
export function requireStore(config: ResolvedConfig): string {
  if (config.store) return config.store;
  throw new BatonError('usage', {
    what: 'No store is configured.',
    where: config.source ?? 'no config file found',
    next: 'Pass --store s3://bucket/prefix (or file:///dir) or set "store:" in baton.yaml.',
  });
}
