import { BatonError, EXIT_CODES } from '../errors.js';
import { nextStep } from '../next-step.js';
import { requireStore, type GlobalFlags } from '../config/config.js';
import { action, type Register } from './context.js';
import { cursorAddressable } from './terminal-kind.js';

/**
 * `baton failover` (docs/cli.md): the interactive walk. It needs a terminal for the typed
 * confirmations; without one it refuses to start (exit 2) and points at `baton sync`, the same
 * decisions without a screen — a script must never sit waiting on a prompt it cannot see.
 */
export const registerFailover: Register = (program, ctx) => {
  program
    .command('failover')
    .description(
      'interactive walk-through: read both sides, choose an allowed action, confirm (terminal required)',
    )
    .action(
      action(ctx, async () => {
        const { hasTerminal, mountView } = await import('./mount-view.js');
        if (!hasTerminal(ctx)) {
          throw new BatonError('usage', {
            what: 'baton failover is interactive and needs a terminal; stdin or stdout is not a TTY.',
            changed: 'Nothing was written.',
            next: [
              'In scripts use ',
              nextStep('sync'),
              ' (adopt / publish / refuse; --push after a rotation; replacing an authority on purpose takes --force --confirm <LOCAL 8>, the LOCAL fingerprint read from ',
              nextStep('status'),
              ').',
            ],
          });
        }
        const config = ctx.config();
        const storeUrl = requireStore(config);
        const [{ openShareContext }, { failoverPorts }, { batonInvocation }] = await Promise.all([
          import('../share/share-context.js'),
          import('../operations/failover-ports.js'),
          import('../app/status-invocation.js'),
        ]);
        // Errors the walk shows name commands through the one builder, with the flags given.
        const shareContext = { ...(await openShareContext(config)), suggester: ctx.suggester() };
        const ports = failoverPorts(shareContext, storeUrl, config.sealKeyFile);
        const baton = batonInvocation(program.opts<GlobalFlags>());

        if (!cursorAddressable(ctx.stdout, ctx.env)) {
          // TERM=dumb, a 0×0 pty: the same walk and gates as a line-by-line dialogue, no escape codes.
          const [{ runFailoverDialogue }, { askLine }] = await Promise.all([
            import('../app/failover-dialogue.js'),
            import('./ask-line.js'),
          ]);
          const ask = askLine(process.stdin, ctx.stdout);
          try {
            return await runFailoverDialogue({
              ports,
              baton,
              ask: ask.question,
              write: (line) => ctx.stdout.write(`${line}\n`),
            });
          } finally {
            ask.close();
          }
        }
        // Ctrl-C before the walk ended: nothing was confirmed past what the screen showed.
        return mountView(
          ctx,
          { noColor: config.noColor, ifInterrupted: EXIT_CODES['action-needed'] },
          async () => (await import('../../components/FailoverApp.js')).FailoverApp,
          (onExit) => ({ ports, baton, onExit }),
        );
      }),
    );
};
