import { readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as JsYaml from 'js-yaml';
import type * as Zod from 'zod';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { errorCode } from '../fs/system-error.js';

/**
 * A deployment id is exactly 32 lowercase hex characters (what `ca init` and the drill make).
 * It goes into a directory name, a certificate's O and an S3 key, and it is compared byte for
 * byte with the one inside published documents: a short or uppercase id would be accepted
 * here and then refused as "another deployment" at the first read, so it is refused at load.
 */
export const DEPLOYMENT_ID = /^[0-9a-f]{32}$/;
export const DEPLOYMENT_ID_RULE = '32 lowercase hex characters (0-9, a-f)';

/** The fields a config file may set; anything else is refused, never ignored. */
export interface ConfigFile {
  readonly deployment?: string;
  readonly state_dir?: string;
  readonly store?: string;
  readonly seal_key_file?: string;
  /** `none`: this deployment publishes its authority unsealed, on purpose. */
  readonly seal?: string;
  readonly inventory?: string;
  readonly journal_dir?: string;
  /** Seconds one S3 attempt waits for an answer (a number, or a string of one). */
  readonly store_timeout?: string | number;
}

/**
 * The fields, in the order docs/cli.md lists them, each with its words: the config error's
 * "Known fields" and docs/cli.md's table are built from here (`npm run docs:tables`), so the
 * docs cannot say six fields while the loader takes seven. A Record: a field added to
 * ConfigFile without words fails to compile.
 */
export const CONFIG_FIELD_HELP: Readonly<Record<keyof ConfigFile, string>> = {
  deployment: `the deployment id: ${DEPLOYMENT_ID_RULE} (\`--deployment\`)`,
  state_dir: "this host's state dir (`--state-dir`; default `/var/lib/baton/<deployment>`)",
  store:
    "where the authority is published: `s3://bucket/prefix?…`, `ssm:///prefix?…` (billet's Parameter Store) or `file:///dir` (`--store`)",
  seal_key_file: 'the key that seals `ca.key` in the published document (`--seal-key-file`)',
  seal: '`none`: publish `ca.key` unsealed, on purpose (`--no-seal`); never beside `seal_key_file`',
  inventory: 'the mesh inventory, for `mesh` commands (`--inventory`)',
  journal_dir: 'where `mesh-journal.jsonl` is appended (default: the state dir)',
  store_timeout: 'seconds one S3 or SSM attempt waits for an answer (`--store-timeout`; default 5)',
};

export const CONFIG_FIELDS = Object.keys(CONFIG_FIELD_HELP) as readonly (keyof ConfigFile)[];

/**
 * The YAML parser is required only when a config file is actually read: every command starts
 * through this module, and a parser loaded at start-up would be paid by `status --json` in a
 * monitoring loop that passes flags and reads no file (the start-up goal in docs/benchmarks.md).
 */
const requireLazily = createRequire(import.meta.url);
function parseYaml(text: string): unknown {
  // The inventory's parser and schema: one YAML dialect for every file an operator writes.
  const { load, CORE_SCHEMA } = requireLazily('js-yaml') as typeof JsYaml;
  return load(text, { schema: CORE_SCHEMA });
}

/** The global flags of docs/cli.md, as commander hands them over. */
export interface GlobalFlags {
  readonly config?: string;
  readonly deployment?: string;
  readonly stateDir?: string;
  readonly store?: string;
  readonly color?: boolean;
  /** --seal-key-file FILE: overrides seal_key_file. */
  readonly sealKeyFile?: string;
  /** --no-seal: commander's negated option, false when given. */
  readonly seal?: boolean;
  /** --store-unenforced VALUE: the bound override for a store that does not enforce conditional writes. */
  readonly storeUnenforced?: string;
  /** --store-timeout SECONDS: overrides store_timeout. */
  readonly storeTimeout?: string;
}

export interface ResolvedConfig {
  /** The config file that was read, or undefined when none was found. */
  readonly source: string | undefined;
  readonly deployment: string | undefined;
  /** Explicit state dir; `stateDirFor` derives the default from the deployment. */
  readonly stateDir: string | undefined;
  readonly store: string | undefined;
  readonly sealKeyFile: string | undefined;
  /**
   * How this host seals what it publishes: 'key' (sealKeyFile set), 'none' (`seal: none` or
   * --no-seal: key material in the clear, said on purpose), or 'unstated' — then nothing is
   * ever written in the clear (src/share/publish-guards.ts).
   */
  readonly seal: SealChoice;
  readonly inventory: string | undefined;
  readonly journalDir: string | undefined;
  /** --store-unenforced as given (a flag only: never in a file, where it would outlive the decision). */
  readonly storeUnenforced: string | undefined;
  /** True when colour must not be used (flag, NO_COLOR, TERM=dumb). */
  readonly noColor: boolean;
  /** How long one S3 attempt waits for an answer (store_timeout, --store-timeout); undefined: the default. */
  readonly storeTimeoutMs: number | undefined;
}

export type SealChoice = 'key' | 'none' | 'unstated';

export const DEFAULT_STATE_ROOT = '/var/lib/baton';

/**
 * The config search order of docs/cli.md. An explicitly named file (flag or $BATON_CONFIG)
 * must exist; the implicit locations are optional.
 */
export function configCandidates(
  flags: GlobalFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): {
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
      what: `--deployment "${flags.deployment}" is not a deployment id: it must be ${DEPLOYMENT_ID_RULE}.`,
      where: 'the --deployment flag',
      next: [
        'Pass the id your fleet was created with: ',
        nextStep('ca show', { host: 'a controller' }),
        ' prints it.',
      ],
    });
  }
  const sealKeyFile = flags.sealKeyFile ? path.resolve(cwd, flags.sealKeyFile) : relative(file.seal_key_file);
  const noSeal = flags.seal === false || file.seal === 'none';
  if (sealKeyFile && noSeal) {
    throw new BatonError('config', {
      what: `Sealing is stated twice and both ways: a seal key (${flags.sealKeyFile ? '--seal-key-file' : 'seal_key_file'}) and ${flags.seal === false ? '--no-seal' : '"seal: none"'}.`,
      where: source ?? 'the command line',
      next: 'Keep one: the seal key to publish sealed, or `seal: none` / --no-seal to publish in the clear on purpose.',
    });
  }
  const storeTimeoutMs =
    flags.storeTimeout !== undefined
      ? timeoutMs(flags.storeTimeout, 'the --store-timeout flag', 'usage')
      : file.store_timeout !== undefined
        ? timeoutMs(file.store_timeout, source ?? 'the config file', 'config')
        : undefined;
  const noColor =
    flags.color === false || (env.NO_COLOR !== undefined && env.NO_COLOR !== '') || env.TERM === 'dumb';
  return {
    source,
    deployment: flags.deployment ?? file.deployment,
    stateDir: flags.stateDir ? path.resolve(cwd, flags.stateDir) : relative(file.state_dir),
    store: flags.store ?? file.store,
    sealKeyFile,
    seal: sealKeyFile ? 'key' : noSeal ? 'none' : 'unstated',
    inventory: relative(file.inventory),
    journalDir: relative(file.journal_dir),
    storeUnenforced: flags.storeUnenforced,
    noColor,
    storeTimeoutMs,
  };
}

/** Seconds between 1 and 300, as a number of milliseconds; anything else is refused, never clamped. */
const STORE_TIMEOUT_MAX_S = 300;
function timeoutMs(value: string | number, where: string, code: 'usage' | 'config'): number {
  const seconds =
    typeof value === 'number' ? value : /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(seconds) || seconds < 1 || seconds > STORE_TIMEOUT_MAX_S) {
    throw new BatonError(code, {
      what: `The store timeout "${String(value)}" is not a number of seconds between 1 and ${STORE_TIMEOUT_MAX_S}.`,
      where,
      next: 'Give seconds, e.g. store_timeout: 10 in baton.yaml or --store-timeout 10; leave it out for the default 5.',
    });
  }
  return Math.round(seconds * 1000);
}

/** The S3 adapter's options from the config: only what the operator set, the rest the adapter's defaults. */
export function storeOptionsOf(config: Pick<ResolvedConfig, 'storeTimeoutMs'>): {
  readonly requestTimeoutMs?: number;
} {
  return config.storeTimeoutMs === undefined ? {} : { requestTimeoutMs: config.storeTimeoutMs };
}

export function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new BatonError('config', {
      what: `The config file could not be read (${errorCode(error)}).`,
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
  const fault = configFault(raw);
  if (fault) {
    throw new BatonError('config', {
      what: fault,
      where: file,
      next: `Known fields: ${CONFIG_FIELDS.join(', ')}.`,
    });
  }
  return raw as ConfigFile;
}

/**
 * The one check of a parsed config file: a plain mapping of the known fields, each a
 * non-empty string, the deployment id 32 lowercase hex, `seal` only "none". A typo'd field is refused
 * rather than ignored: ignoring `deploymnet:` would run against whatever deployment the flags
 * or defaults name. A valid file is judged here without loading zod (start-up); a fault is
 * worded by zod's own messages, loaded only then.
 */
function configFault(raw: unknown): string | undefined {
  // A plain mapping only: a `%YAML 1.1` set, ordered map or date has no own fields, and
  // reading it as "sets nothing" would silently drop what the operator wrote. zod would take
  // a Map for an object, so this one is said in our words.
  if (
    typeof raw === 'object' &&
    raw !== null &&
    !Array.isArray(raw) &&
    Object.getPrototypeOf(raw) !== Object.prototype
  ) {
    return `The config file holds a ${(raw as { constructor?: { name?: string } }).constructor?.name ?? 'value'}, not a mapping of fields: write "field: value" lines without a %YAML 1.1 tag.`;
  }
  if (isConfigFile(raw)) return undefined;
  return zodFault(raw);
}

function isConfigFile(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false;
  return Object.entries(raw).every(
    ([field, value]) =>
      (CONFIG_FIELDS as readonly string[]).includes(field) &&
      (value === undefined ||
        (field === 'store_timeout' && typeof value === 'number') ||
        (typeof value === 'string' &&
          value.length > 0 &&
          (field !== 'deployment' || DEPLOYMENT_ID.test(value)) &&
          (field !== 'seal' || value === 'none'))),
  );
}

/** The first issue zod finds, as one sentence naming the field (or the unknown fields). */
function zodFault(raw: unknown): string {
  const { z } = requireLazily('zod') as typeof Zod;
  const text = () => z.string().min(1).optional();
  const parsed = z
    .object({
      deployment: z.string().regex(DEPLOYMENT_ID, DEPLOYMENT_ID_RULE).optional(),
      state_dir: text(),
      store: text(),
      seal_key_file: text(),
      seal: z
        .literal('none', {
          error: 'the only value is "none" (publish unsealed on purpose); to seal, set seal_key_file',
        })
        .optional(),
      inventory: text(),
      journal_dir: text(),
      store_timeout: z.union([z.number(), z.string().min(1)]).optional(),
    })
    .strict()
    .safeParse(raw);
  const issue = parsed.error?.issues[0];
  if (!issue) return 'The config file is not valid.';
  if (issue.code === 'unrecognized_keys') return `Unknown config field "${issue.keys.join('", "')}".`;
  return `Config field "${issue.path.join('.') || '(top level)'}" is invalid: ${issue.message}.`;
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
    next: 'Pass --store s3://bucket/prefix (or ssm:///prefix, or file:///dir) or set "store:" in baton.yaml.',
  });
}
