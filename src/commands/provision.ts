/**
 * `baton provision postgres` (docs/mesh-rotation.md): runs on a provider's machine, as an ordinary
 * long-running service under `--watch`, and makes PostgreSQL accept what the mesh delivered.
 */
import path from 'node:path';
import { Option } from 'commander';
import { BatonError, EXIT_OK } from '../errors.js';
import { rolledBackPath } from '../mesh/transport.js';
import { action, usageError, type Register } from './context.js';

interface ProvisionFlags {
  readonly meshDir?: string;
  readonly provider?: string;
  readonly pgHost: string;
  readonly pgPort: string;
  readonly pgDatabase: string;
  readonly superuser: string;
  readonly superuserFile?: string;
  readonly watch?: boolean;
  readonly once?: boolean;
  readonly interval: string;
  readonly lockTimeout: string;
  readonly statementTimeout: string;
  readonly poolerAuthFile?: string;
  readonly poolerAdmin: string;
  readonly poolerAdminUser: string;
  readonly poolerAdminPasswordFile?: string;
}

/** A provider name is a directory name under the mesh dir: never a path of its own. */
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const SUPERUSER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,62}$/;

export const registerProvision: Register = (program, ctx) => {
  const provision = program
    .command('provision')
    .description('make a provider accept the credentials the mesh delivered');
  provision
    .command('postgres')
    .description(
      'apply <mesh-dir>/provides/<provider>/* as PostgreSQL role passwords (SCRAM verifiers computed here) and write a receipt per role',
    )
    .addOption(
      new Option('--mesh-dir <dir>', 'the mesh directory on this machine (e.g. /var/lib/baton/mesh)'),
    )
    .addOption(new Option('--provider <name>', 'the provider this machine serves, e.g. pg-main'))
    .addOption(new Option('--pg-host <host>', 'PostgreSQL host').default('localhost'))
    .addOption(new Option('--pg-port <port>', 'PostgreSQL port').default('5432'))
    .addOption(new Option('--pg-database <name>', 'database to connect to').default('postgres'))
    .addOption(new Option('--superuser <name>', 'role the provisioner logs in as').default('postgres'))
    .addOption(
      new Option(
        '--superuser-file <file>',
        "file holding that role's password (default <mesh-dir>/consumes/<provider>/<superuser>)",
      ),
    )
    .addOption(
      new Option(
        '--watch',
        'keep running: poll every --interval seconds, retry with backoff while the database is down',
      ),
    )
    .addOption(new Option('--once', 'one cycle, then exit (the default without --watch)').conflicts('watch'))
    .addOption(new Option('--interval <seconds>', 'poll interval for --watch').default('2'))
    .addOption(
      new Option(
        '--lock-timeout <seconds>',
        "how long one role's statement waits for a lock another transaction holds before that role is skipped for this cycle",
      ).default('1'),
    )
    .addOption(
      new Option(
        '--statement-timeout <seconds>',
        "how long one role's statement may run before that role is skipped for this cycle",
      ).default('10'),
    )
    .addOption(
      new Option(
        '--pooler-auth-file <file>',
        "a pgbouncer's auth_file on this machine (inventory poolers:): each login's line gets the verifier set, then RELOAD, before its receipt",
      ),
    )
    .addOption(
      new Option(
        '--pooler-admin <host:port>',
        "that pgbouncer's admin console (host or socket dir, port)",
      ).default('127.0.0.1:6432'),
    )
    .addOption(new Option('--pooler-admin-user <name>', 'the admin console user').default('pgbouncer'))
    .addOption(
      new Option(
        '--pooler-admin-password-file <file>',
        "file holding that user's password (0600; none: no password)",
      ),
    )
    .action(
      action(ctx, async (flags: ProvisionFlags) => {
        const settings = parseFlags(flags);
        const { PostgresProvisioner } = await import('../provisioner/postgres-provisioner.js');
        const { postgresRoles, providerLock } = await import('../provisioner/postgres-roles.js');
        const log = (line: string) => void ctx.stdout.write(`provision ${settings.provider}: ${line}\n`);
        const lock = providerLock(settings.target, settings.provider);
        const pooler = settings.pooler
          ? await (async (p) => {
              const { PoolerAuthFile, adminConsoleReload } =
                await import('../provisioner/pooler-auth-file.js');
              const file = new PoolerAuthFile({ file: p.file, reload: adminConsoleReload(p.admin) });
              return { file: p.file, set: (user: string, verifier: string) => file.set(user, verifier) };
            })(settings.pooler)
          : undefined;
        const provisioner = new PostgresProvisioner({
          meshDir: settings.meshDir,
          provider: settings.provider,
          connect: postgresRoles(settings.target, { ...settings.timeouts, log }),
          log,
          lock,
          ...(pooler ? { pooler } : {}),
        });
        if (flags.watch) {
          const { watchProvisioner } = await import('../provisioner/watch-provisioner.js');
          const controller = new AbortController();
          const stop = (signal: NodeJS.Signals) => {
            log(`${signal}: stopping after the current statement`);
            controller.abort();
          };
          process.once('SIGTERM', stop);
          process.once('SIGINT', stop);
          log(
            `watching ${provisioner.deliveredDir} every ${settings.intervalMs / 1000} s (superuser password from ${settings.target.superuserFile})`,
          );
          const { heartbeatWriter } = await import('../provisioner/heartbeat.js');
          const heartbeat = heartbeatWriter({
            deliveredDir: provisioner.deliveredDir,
            provider: settings.provider,
            superuser: settings.target.superuser,
            intervalMs: settings.intervalMs,
            log,
            ...(settings.pooler
              ? {
                  pooler: {
                    auth_file: settings.pooler.file,
                    admin: `${settings.pooler.admin.host}:${settings.pooler.admin.port}`,
                    admin_user: settings.pooler.admin.user,
                  },
                }
              : {}),
          });
          let beat = Promise.resolve();
          try {
            await watchProvisioner(provisioner, {
              intervalMs: settings.intervalMs,
              signal: controller.signal,
              log,
              // In order, one at a time: a slow disk never lets an older cycle's beat land last.
              onCycle: (report) => void (beat = beat.then(() => heartbeat.cycle(report))),
            });
            await beat;
            await heartbeat.stopped();
          } finally {
            await lock.release();
            process.removeListener('SIGTERM', stop);
            process.removeListener('SIGINT', stop);
          }
          log('stopped');
          return EXIT_OK;
        }
        let report;
        try {
          report = await provisioner.runCycle();
        } finally {
          await lock.release();
        }
        if (report.busy !== undefined) {
          throw new BatonError('lock-busy', {
            what: `Another provisioner for provider "${settings.provider}" is running: ${report.busy}.`,
            where: `postgresql://${settings.target.superuser}@${settings.target.host}:${settings.target.port}/${settings.target.database} (advisory lock)`,
            next: 'It applies what was delivered, so there is nothing for this one to do; stop it first to run a cycle by hand.',
            changed: 'Nothing was applied.',
          });
        }
        if (report.blocked && report.failed.length === 0) throw report.blocked;
        if (report.failed.length > 0) {
          const appliedRoles = report.applied.map((a) => a.role);
          throw new BatonError('failed', {
            what: `${report.failed.length} delivered credential${report.failed.length === 1 ? '' : 's'} not applied: ${report.failed.map((f) => `${f.role} (${f.reason})`).join('; ')}.`,
            where: report.blocked?.where
              ? `${provisioner.deliveredDir}; ${report.blocked.where}`
              : provisioner.deliveredDir,
            next: [
              report.blocked?.next,
              report.failed.some((f) => f.inFile)
                ? 'Fix or remove the files named above and run again; receipts exist only for what was applied.'
                : undefined,
            ]
              .filter(Boolean)
              .join(' '),
            changed:
              appliedRoles.length > 0
                ? `Applied, with receipts: ${appliedRoles.join(', ')}.`
                : 'Nothing was applied.',
          });
        }
        if (report.applied.length === 0)
          log(
            `nothing to apply (${report.unchanged} role${report.unchanged === 1 ? '' : 's'} already applied)`,
          );
        return EXIT_OK;
      }),
    );
};

interface Settings {
  readonly meshDir: string;
  readonly provider: string;
  readonly intervalMs: number;
  readonly timeouts: { readonly lockTimeoutMs: number; readonly statementTimeoutMs: number };
  readonly pooler?: {
    readonly file: string;
    readonly admin: { host: string; port: number; user: string; passwordFile?: string };
  };
  readonly target: {
    readonly host: string;
    readonly port: number;
    readonly database: string;
    readonly superuser: string;
    readonly superuserFile: string;
    readonly providerEndFile: string;
    readonly rolledBackFile: string;
  };
}

function parseFlags(flags: ProvisionFlags): Settings {
  if (!flags.meshDir)
    throw usageError(
      '--mesh-dir is required.',
      'Name the mesh directory on this machine, e.g. --mesh-dir /var/lib/baton/mesh.',
    );
  if (!flags.provider)
    throw usageError(
      '--provider is required.',
      'Name the provider this machine serves, e.g. --provider pg-main.',
    );
  if (!PROVIDER_NAME.test(flags.provider)) {
    throw usageError(
      `--provider "${flags.provider}" is not a provider name (letters, digits, ".", "_" or "-").`,
      "Use the provider's name from the inventory.",
    );
  }
  if (!SUPERUSER_NAME.test(flags.superuser)) {
    throw usageError(
      `--superuser "${flags.superuser}" is not a role name (letters, digits, "_" or "-", at most 63).`,
      'Name the role the provisioner logs in as, e.g. --superuser postgres.',
    );
  }
  const port = Number(flags.pgPort);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw usageError(
      `--pg-port "${flags.pgPort}" is not a port number (1–65535).`,
      'Give the port PostgreSQL listens on, e.g. --pg-port 5432.',
    );
  }
  const interval = Number(flags.interval);
  if (!Number.isFinite(interval) || interval < 0.05 || interval > 86_400) {
    throw usageError(
      `--interval "${flags.interval}" is not a number of seconds between 0.05 and 86400.`,
      'Give the poll interval in seconds, e.g. --interval 2.',
    );
  }
  const seconds = (flag: string, value: string, max: number) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0.001 || n > max)
      throw usageError(
        `${flag} "${value}" is not a number of seconds between 0.001 and ${max}.`,
        `Give it in seconds, e.g. ${flag} 1.`,
      );
    return Math.round(n * 1000);
  };
  // Below the client's own 30 s query timeout, which would count as a lost connection.
  const timeouts = {
    lockTimeoutMs: seconds('--lock-timeout', flags.lockTimeout, 25),
    statementTimeoutMs: seconds('--statement-timeout', flags.statementTimeout, 25),
  };
  const meshDir = path.resolve(flags.meshDir);
  return {
    meshDir,
    provider: flags.provider,
    intervalMs: Math.round(interval * 1000),
    timeouts,
    ...(flags.poolerAuthFile === undefined ? {} : { pooler: poolerSettings(flags, flags.poolerAuthFile) }),
    target: {
      host: flags.pgHost,
      port,
      database: flags.pgDatabase,
      superuser: flags.superuser,
      superuserFile: path.resolve(
        flags.superuserFile ?? path.join(meshDir, 'consumes', flags.provider, flags.superuser),
      ),
      // When the mesh rotates the superuser's own pair, the database holds this end's password
      // from ALTER ROLE until the consumer end flips after the receipt.
      providerEndFile: path.join(meshDir, 'provides', flags.provider, flags.superuser),
      rolledBackFile: rolledBackPath(path.join(meshDir, 'provides', flags.provider, flags.superuser)),
    },
  };
}

/** `--pooler-auth-file` and its admin console: `host:port`, the host a name, an address or a socket directory. */
function poolerSettings(flags: ProvisionFlags, file: string): NonNullable<Settings['pooler']> {
  const m = /^(.+):(\d{1,5})$/.exec(flags.poolerAdmin);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65_535)
    throw usageError(
      `--pooler-admin "${flags.poolerAdmin}" is not host:port.`,
      "Give the pooler's admin console as host:port (its listen address, or its unix_socket_dir), e.g. --pooler-admin 127.0.0.1:6432.",
    );
  if (!SUPERUSER_NAME.test(flags.poolerAdminUser))
    throw usageError(
      `--pooler-admin-user "${flags.poolerAdminUser}" is not a user name.`,
      "Name one of pgbouncer.ini's admin_users, e.g. --pooler-admin-user pgbouncer.",
    );
  return {
    file: path.resolve(file),
    admin: {
      host: m[1]!,
      port,
      user: flags.poolerAdminUser,
      ...(flags.poolerAdminPasswordFile === undefined
        ? {}
        : { passwordFile: path.resolve(flags.poolerAdminPasswordFile) }),
    },
  };
}
