/**
 * The command tree of docs/cli.md. Each command group registers itself from src/commands/;
 * nothing heavy is imported here so start-up stays cheap.
 */
import { Command, CommanderError, Option } from 'commander';
import { EXIT_CODES, EXIT_OK, exitCodeHelp, exitCodeRows } from './errors.js';
import { makeContext, type Register } from './commands/context.js';
import { registerCa } from './commands/ca.js';
import { registerStore } from './commands/store.js';
import { registerKey } from './commands/key.js';
import { registerSync } from './commands/sync.js';
import { registerStatus } from './commands/status.js';
import { registerFailover } from './commands/failover.js';
import { registerMesh } from './commands/mesh.js';
import { registerProvision } from './commands/provision.js';
import { registerProvisionUnit } from './commands/provision-unit.js';
import { registerDrill } from './commands/drill.js';
import { surviveLostTerminal } from './commands/closed-output.js';
import { printUsageErrorAsJson } from './commands/json-errors.js';
import { readBuildInfo, registerVersion } from './commands/version.js';
import { registerCompletion } from './commands/completion.js';

// The AWS SDK warns about Node 20 on stderr, which would tear a full-screen view.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** The package's folder: package.json and dist/ sit one level above both src/ and the built dist/. */
const PACKAGE_ROOT = new URL('../', import.meta.url);

/** Each top-level command, in the order help lists them, and the module that registers it. */
const COMMANDS: Readonly<Record<string, Register>> = {
  status: registerStatus,
  failover: registerFailover,
  sync: registerSync,
  ca: registerCa,
  store: registerStore,
  key: registerKey,
  mesh: registerMesh,
  provision: (program, ctx) => {
    registerProvision(program, ctx);
    registerProvisionUnit(program, ctx, PACKAGE_ROOT);
  },
  drill: registerDrill,
  version: (program, ctx) => registerVersion(program, ctx, PACKAGE_ROOT),
  completion: (program, ctx) => registerCompletion(program, ctx, () => buildProgram()),
};

/**
 * The command tree. Given the arguments of a run that names a command, only that command is
 * registered: `status --json` in a monitoring loop builds one command's options, not all 73
 * (npm run bench, "Start-up"). Anything else (no command, help, a typo to suggest a fix for)
 * gets the whole tree, so what commander prints is the same.
 */
export function buildProgram(args?: readonly string[]): Command {
  const program = new Command('baton')
    .description(
      "Carry a deployment's node-wire authority between controllers; rotate mesh credentials all-or-nothing.",
    )
    .addOption(
      new Option(
        '--config <file>',
        'config file (default: $BATON_CONFIG, ./baton.yaml, $XDG_CONFIG_HOME/baton/baton.yaml, /etc/baton/baton.yaml)',
      ),
    )
    .addOption(new Option('--deployment <id>', 'deployment id'))
    .addOption(new Option('--state-dir <dir>', 'state dir (default /var/lib/baton/<deployment>)'))
    .addOption(
      new Option('--store <url>', 'where the authority is published: s3://bucket/prefix or file:///dir'),
    )
    .addOption(
      new Option(
        '--seal-key-file <file>',
        'the 32-byte key that seals the published document (overrides seal_key_file)',
      ),
    )
    .addOption(
      new Option(
        '--no-seal',
        'publish in the clear on purpose when this host has no seal key (as "seal: none" in baton.yaml)',
      ),
    )
    .addOption(
      new Option(
        '--store-unenforced <value>',
        'write to a store known not to enforce conditional writes; VALUE is the "override value" that store check prints',
      ),
    )
    .addOption(
      new Option(
        '--store-timeout <seconds>',
        'S3: how long one attempt waits for the store to answer (default 5; 3 attempts, each also up to 3 s to connect; overrides store_timeout)',
      ),
    )
    .addOption(new Option('--no-color', 'no colour (also NO_COLOR, TERM=dumb)'))
    .addOption(new Option('-V, --version', 'print the version and exit'))
    .showHelpAfterError(false)
    .addHelpText('after', `\n${exitCodeHelp()}`)
    .exitOverride();
  program.configureOutput({ outputError: (text, write) => write(`baton: ${text.replace(/^error: /, '')}`) });
  // Read only when asked.
  program.on('option:version', () => {
    const { version } = readBuildInfo(PACKAGE_ROOT);
    process.stdout.write(`${version}\n`);
    throw new CommanderError(EXIT_OK, 'commander.version', version);
  });
  const ctx = makeContext(program);
  const named = args === undefined ? undefined : commandNamed(program, args);
  for (const register of named === undefined ? Object.values(COMMANDS) : [COMMANDS[named]!])
    register(program, ctx);
  for (const command of program.commands) exitOverrideAll(command);
  return program;
}

/**
 * The command `args` (after node and the script) run, when it is one of COMMANDS: the first
 * word that is neither a global option nor the value one takes.
 */
export function commandNamed(program: Command, args: readonly string[]): string | undefined {
  const takesValue = new Set(
    program.options
      .filter((option) => option.required || option.optional)
      .flatMap((option) => [option.long, option.short]),
  );
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (takesValue.has(arg)) i += 1;
    else if (!arg.startsWith('-')) return Object.hasOwn(COMMANDS, arg) ? arg : undefined;
  }
  return undefined;
}

function exitOverrideAll(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) exitOverrideAll(sub);
}

/**
 * Whether a run names nothing to do: no command, no help or version flag, at most global
 * options. Such a run asked for nothing that failed, so it prints the help on stdout and exits
 * 0 (as `kubectl` and `docker` do), where a pager or `| less` can take it.
 */
export function namesNothing(program: Command, args: readonly string[]): boolean {
  const takesValue = new Set(
    program.options
      .filter((option) => option.required || option.optional)
      .flatMap((option) => [option.long, option.short]),
  );
  const known = new Set(program.options.flatMap((option) => [option.long, option.short]));
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    const flag = arg.split('=')[0]!;
    if (!arg.startsWith('-') || !known.has(flag) || flag === '--version' || flag === '-V') return false;
    if (takesValue.has(flag) && !arg.includes('=')) i += 1;
  }
  return true;
}

export async function main(argv: string[]): Promise<void> {
  // Before anything writes: a terminal or pipe that goes away mid-command is never fatal.
  surviveLostTerminal();
  const program = buildProgram(argv.slice(2));
  if (namesNothing(program, argv.slice(2))) {
    program.outputHelp();
    process.exitCode = EXIT_OK;
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      const ok =
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help';
      process.exitCode = ok ? EXIT_OK : EXIT_CODES.usage;
      if (!ok) await printUsageErrorAsJson(program, argv.slice(2), error, process.stdout);
      return;
    }
    throw error;
  }
}

/** baton(1), from the whole command tree: `npm run build` writes it to dist/man/baton.1. */
export async function manPage(): Promise<string> {
  const [{ manPage: page }, { cliTree }] = await Promise.all([
    import('./commands/man-page.js'),
    import('./commands/cli-tree.js'),
  ]);
  return page(cliTree(buildProgram()), {
    version: readBuildInfo(PACKAGE_ROOT).version,
    exitCodes: exitCodeRows(),
  });
}
