/**
 * `baton store check`: does the store enforce conditional writes? It probes create-only
 * (If-None-Match: *) AND replace-if-unchanged (If-Match: a stale ETag refused, the current one
 * accepted) on a probe object, removes every version of it, prints the answer, and records it in
 * `<stateDir>/store-check.json` for `status`. Exit 0 when enforced, 3 when not — a store that
 * ignores preconditions lets two controllers publishing at once overwrite each other.
 */
import { asBatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { requireStore, stateDirFor } from '../config/config.js';
import { action, type Register } from './context.js';

export const registerStore: Register = (program, ctx) => {
  const store = program.command('store').description('the store where the authority is published');
  store
    .command('check')
    .description('does the store enforce conditional writes? (writes and removes a probe object)')
    .action(
      action(ctx, async () => {
        const config = ctx.config();
        const url = requireStore(config);
        const stateDir = stateDirFor(config);
        const { openStore } = await import('../store/open-store.js');
        const { writeStoreCheck } = await import('../store/store-check-record.js');
        const target = await openStore(url);
        const check = await target.checkConditionalWrites();
        let recorded: string;
        try {
          recorded = await writeStoreCheck(stateDir, url, check, new Date());
        } catch (error) {
          throw asBatonError(error, {
            what: 'The check ran, but its result could not be recorded for status',
            where: stateDir,
            next: 'Check that the state dir exists and is writable by this user.',
          });
        }
        const lines = check.enforced
          ? ['✓ conditional writes are enforced', check.detail]
          : [
              `! conditional writes are NOT enforced (failed: ${check.failed.join(', ')})`,
              check.detail,
              'baton publishes with If-None-Match / If-Match so that a controller never overwrites what another just published; this store would let that happen. Use a store that honours them (AWS S3, MinIO, Ceph RGW, R2) in production.',
            ];
        ctx.stdout.write(`${lines.join('\n')}\nRecorded in ${recorded} (status shows it).\n`);
        return check.enforced ? EXIT_OK : EXIT_CODES['action-needed'];
      }),
    );
};
