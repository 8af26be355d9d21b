/**
 * `baton key generate FILE`: a new seal key, 32 random bytes, created 0600 durably (a crash
 * leaves no key or the whole key under FILE, never a short one that every seal refuses). It
 * NEVER OVERWRITES: replacing a seal key that controllers share would make every sealed
 * document unreadable to the hosts still holding the old one. The key is never printed.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { action, type Register } from './context.js';

export const registerKey: Register = (program, ctx) => {
  const key = program.command('key').description('seal keys for sealed published documents');
  key
    .command('generate')
    .argument('<file>', 'where to write the new key (must not exist)')
    .description('write a new 32-byte seal key to FILE (0600); never overwrites')
    .action(
      action(ctx, async (file: string) => {
        const target = path.resolve(file);
        // Loaded here, not at start-up: every other command would parse them for nothing.
        const [{ randomBytes }, { createFileDurably }, { SEAL_KEY_BYTES }] = await Promise.all([
          import('node:crypto'),
          import('../fs/durable-write.js'),
          import('../share/seal.js'),
        ]);
        try {
          await createFileDurably(
            path.dirname(target),
            path.basename(target),
            randomBytes(SEAL_KEY_BYTES),
            0o600,
          );
        } catch (error) {
          throw keyWriteError(target, error);
        }
        ctx.stdout.write(
          `Wrote a new ${SEAL_KEY_BYTES}-byte seal key to ${target} (mode 0600).\n` +
            `Copy this same file to every controller of the deployment and set "seal_key_file: ${target}" in baton.yaml.\n`,
        );
      }),
    );
};

function keyWriteError(file: string, error: unknown): BatonError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EEXIST' || code === 'ELOOP') {
    return new BatonError('refused', {
      what: 'A file already exists where the new seal key would go; baton never overwrites a key.',
      where: file,
      next: 'Choose another path, or remove the old key on purpose once no controller uses it.',
      changed: 'Nothing was written.',
    });
  }
  return new BatonError('failed', {
    what: `The seal key could not be written (${code ?? String(error)}).`,
    where: file,
    next: 'Check that the directory exists and is writable by this user; remove any partial file this left.',
    changed: 'Nothing usable was written.',
    cause: error,
  });
}
