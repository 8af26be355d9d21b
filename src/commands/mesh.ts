import { Option, type Command } from 'commander';
import { action, type Register } from './context.js';
import { printsJsonOnError } from './json-errors.js';
import type { MeshFlags, MeshSeedFlags } from './mesh-flags.js';

/**
 * `baton mesh plan | rotate | resume | rollback | seed | status` (docs/mesh-rotation.md, docs/cli.md). Everything beyond argument parsing
 * is imported when the command runs, so other commands do not pay for it.
 */

/** A repeated selector flag keeps every value (the union), never only the last. */
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** The inventory and how its holders are contacted: the same flags on every command that writes or reads them. */
function withHolders(command: Command): Command {
  return command
    .addOption(new Option('--inventory <file>', 'the mesh inventory (default: "inventory:" in baton.yaml)'))
    .addOption(new Option('--concurrency <n>', 'holders contacted at once').default('8'))
    .addOption(
      new Option(
        '--timeout <seconds>',
        'how long each holder has to answer, per step (the one bound on every ssh)',
      ).default('15'),
    );
}

function withSelector(command: Command): Command {
  return withHolders(
    command
      .addOption(
        new Option('--consumer <name>', 'every pair of this consumer (repeat for several)').argParser(
          collect,
        ),
      )
      .addOption(
        new Option('--provider <name>', 'every pair of this provider (repeat for several)').argParser(
          collect,
        ),
      )
      .addOption(
        new Option(
          '--machine <name>',
          'every pair with an end on this machine (repeat for several)',
        ).argParser(collect),
      )
      .addOption(
        new Option('--pair <provider:consumer>', 'one pair (repeat for several)').argParser(collect),
      ),
  );
}

export const registerMesh: Register = (program, ctx) => {
  const mesh = program
    .command('mesh')
    .description('rotate mesh credentials (one role per provider/consumer pair) all-or-nothing');
  withSelector(mesh.command('plan').description('the affected holders, resolved; changes nothing'))
    .addOption(new Option('--json', 'machine-readable output'))
    .action(
      action(
        ctx,
        printsJsonOnError(ctx, 'mesh plan', async (flags: MeshFlags) => {
          const { runMeshPlan } = await import('./rotation-cli.js');
          return runMeshPlan(ctx, flags);
        }),
      ),
    );
  withSelector(mesh.command('rotate').description('all-or-nothing rotation of the selected pairs'))
    .addOption(new Option('--yes', 'confirm without typing (scripts); required without a terminal'))
    .addOption(
      new Option(
        '--wait <seconds>',
        'how long to wait for provider receipts; a pair without one is rolled back (exit 3)',
      ).default('10'),
    )
    .addOption(
      new Option(
        '--older-than <age>',
        'only pairs last rotated longer ago than this (90d, 12h); combines with the selectors',
      ),
    )
    .addOption(
      new Option(
        '--revoke-previous',
        'alternating pairs: once every consumer end is committed, give the login each consumer left a fresh password delivered nowhere (its open sessions are named)',
      ),
    )
    .addOption(
      new Option('--end-sessions', "with --revoke-previous: also end the left logins' open sessions"),
    )
    .addOption(
      new Option(
        '--app-behind <code>',
        "rotate a pair whose app is behind anyway, breaking it: the pair's override code from mesh status (repeat per pair)",
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .action(
      action(ctx, async (flags: MeshFlags) => {
        const { runMeshRotate } = await import('./rotation-cli.js');
        return runMeshRotate(ctx, flags);
      }),
    );
  withSelector(
    mesh.command('status').description(
      // Each of PAIR_STATES (src/mesh/mesh-status.ts), worst first: test/docs/json-fields.test.ts checks.
      'every pair: unreachable, drifted, changed-in-db, app-behind, staged, pending or applied, and its age; read-only, digests only',
    ),
  )
    .addOption(new Option('--json', 'machine-readable output (see docs/mesh-status.md)'))
    .addOption(
      new Option('--max-age <age>', 'pairs last rotated longer ago than this need action (90d, 12h)'),
    )
    .action(
      action(
        ctx,
        printsJsonOnError(ctx, 'mesh status', async (flags: MeshFlags) => {
          const { runMeshStatus } = await import('./mesh-status.js');
          return runMeshStatus(ctx, flags);
        }),
      ),
    );
  mesh
    .command('seed')
    .description(
      "install a password the database already has into both ends of one pair, without rotating it (bootstrap: the provisioner's superuser)",
    )
    .addOption(new Option('--pair <provider:consumer>', 'the pair to seed').makeOptionMandatory())
    .addOption(
      new Option(
        '--from-file <file>',
        'file holding the password (never argv or env); one trailing newline is ignored',
      ).makeOptionMandatory(),
    )
    .addOption(new Option('--inventory <file>', 'the mesh inventory (default: "inventory:" in baton.yaml)'))
    .addOption(
      new Option('--timeout <seconds>', 'how long each holder has to answer when resolving').default('15'),
    )
    .action(
      action(ctx, async (flags: MeshSeedFlags) => {
        const { runMeshSeed } = await import('./rotation-cli.js');
        return runMeshSeed(ctx, flags);
      }),
    );
  withHolders(
    mesh
      .command('resume')
      .description(
        'finish a rotation from what is staged: provider ends, then each consumer end whose receipt arrived (never a new secret)',
      )
      .argument('<rotation-id>'),
  )
    .addOption(
      new Option('--wait <seconds>', 'how long to wait for provider receipts (0 = look once)').default('10'),
    )
    .action(
      action(
        ctx,
        async (id: string, flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>) => {
          const { runMeshFinishing } = await import('./rotation-cli.js');
          return runMeshFinishing(ctx, 'resume', id, flags);
        },
      ),
    );
  withHolders(
    mesh
      .command('rollback')
      .description(
        'take back what a rotation left unfinished: each provider gets its previous file back, each staged consumer end is removed (never a new secret)',
      )
      .argument('<rotation-id>'),
  )
    .addOption(
      new Option(
        '--wait <seconds>',
        'how long to wait for the receipt to show the old password again',
      ).default('10'),
    )
    .action(
      action(
        ctx,
        async (id: string, flags: Pick<MeshFlags, 'inventory' | 'concurrency' | 'wait' | 'timeout'>) => {
          const { runMeshFinishing } = await import('./rotation-cli.js');
          return runMeshFinishing(ctx, 'rollback', id, flags);
        },
      ),
    );
};
