/**
 * `baton mesh seed`: installs a secret the database ALREADY HAS into both ends of one pair,
 * without rotating it — the way the provisioner's own superuser password first arrives at
 * `consumes/<provider>/<superuser>` (a rotation needs a provisioner that can already log in).
 * The same two phases as a rotation (stage both ends, read the digests back, then rename), so a
 * failed seed leaves nothing half-written; the secret goes to the holders on the transport's
 * stdin, never into argv, the environment, the journal or the output.
 */
import { readFileSync, statSync } from 'node:fs';
import { BatonError } from '../errors.js';
import type { SecretDigest } from './digest.js';
import { endSecrets, unstageAll, type MachineFailure } from './delivery.js';
import { mapBounded } from './map-bounded.js';
import { resolveHolders, type ResolveOptions } from './resolve-holders.js';
import type { RotationPlan } from './rotation-plan.js';
import { Secret, secretProblem } from './secret.js';
import { reasonOf, type TransportFor } from './transport.js';
import { errorCode } from '../fs/system-error.js';

/**
 * The secret in `file`: its bytes exactly, less ONE trailing line break (what `echo` and most
 * editors add; the database's password never ends with one). Anything else that is not
 * printable ASCII is refused, as the provisioner would refuse it.
 */
export function readSeedSecret(file: string): Secret {
  let bytes: Buffer;
  try {
    if (!statSync(file).isFile())
      throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' });
    bytes = readFileSync(file);
  } catch (error) {
    throw new BatonError('usage', {
      what: `The secret file cannot be read (${errorCode(error)}).`,
      where: file,
      next: 'Pass --from-file with a file holding the password the database already has (0600).',
      changed: 'Nothing was sent.',
    });
  }
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end -= 1;
  if (end > 0 && bytes[end - 1] === 0x0d) end -= 1;
  const secret = bytes.subarray(0, end);
  try {
    const problem = secretProblem(secret);
    if (problem) {
      throw new BatonError('usage', {
        what: `The secret file ${problem}.`,
        where: file,
        next: 'Write the password alone, in printable ASCII (one trailing newline is ignored).',
        changed: 'Nothing was sent.',
      });
    }
    return Secret.fromText(secret.toString('latin1'));
  } finally {
    bytes.fill(0);
  }
}

export interface SeedResult {
  /** What the provider end holds (and its receipt will carry). */
  readonly digest: SecretDigest;
  /** What the consumer end holds: the same, or for an alternating pair its own (it names login a). */
  readonly consumerDigest: SecretDigest;
}

/**
 * Resolves both holders (any unresolved: nothing is sent), stages both ends and checks what
 * landed, then renames the provider end and the consumer end. The provisioner then finds the
 * provider end, sets the same password again (harmless) and writes its receipt.
 */
export async function seedPair(
  plan: RotationPlan,
  secret: Secret,
  transportFor: TransportFor,
  resolve: ResolveOptions,
): Promise<SeedResult> {
  const pair = plan.pairs[0]!;
  const resolutions = await resolveHolders(plan.holders, transportFor, resolve, () => undefined);
  const unresolved = plan.holders.flatMap((h) => {
    const r = resolutions.get(h.machine);
    return r?.status === 'unresolved' ? [`${h.machine} (${r.reason})`] : [];
  });
  if (unresolved.length > 0) {
    throw new BatonError('gate-closed', {
      what: `${pair.key} cannot be seeded: ${unresolved.length === 1 ? '1 machine' : `${unresolved.length} machines`} could not be resolved.`,
      where: unresolved.join('; '),
      changed: 'Nothing was sent.',
      next: 'Make the machines reachable, then seed again.',
    });
  }
  const failures: MachineFailure[] = [];
  // An alternating pair is seeded on login a: provider `R+a`, consumer `user=R_a password=…`.
  const ends = endSecrets(pair, secret);
  await mapBounded(plan.holders, resolve.concurrency, async (holder) => {
    try {
      const landed = await transportFor(holder.machine).stage(
        holder.receives.map((d) => ({ path: d.path, secret: ends[d.end] })),
      );
      if (landed.some((d, i) => d !== ends[holder.receives[i]!.end].digest))
        throw new Error('the staged file does not match what was sent');
    } catch (error) {
      failures.push({ machine: holder.machine, reason: reasonOf(error) });
    }
  });
  if (failures.length > 0) {
    const unstaged = await unstageAll(plan.holders, transportFor, resolve.concurrency);
    throw new BatonError('failed', {
      what: `Seeding ${pair.key} failed while staging.`,
      where: failures.map((f) => `${f.machine} (${f.reason})`).join('; '),
      changed:
        unstaged.length === 0
          ? 'Every staged file was removed; nothing took effect.'
          : `Staged files could NOT be removed on ${unstaged.map((f) => f.machine).join(', ')}: remove the *.next files there.`,
      next: 'Fix the machine, then seed again.',
    });
  }
  for (const end of ['provides', 'consumes'] as const) {
    for (const holder of plan.holders) {
      const paths = holder.receives.filter((d) => d.end === end).map((d) => d.path);
      if (paths.length === 0) continue;
      try {
        await transportFor(holder.machine).commit(paths);
      } catch (error) {
        throw new BatonError('failed', {
          what: `Seeding ${pair.key} was interrupted while renaming the ${end === 'provides' ? 'provider' : 'consumer'} end.`,
          where: `${holder.machine} (${reasonOf(error)})`,
          changed: 'The staged files are still there; seeding again with the same file finishes it.',
          next: 'Fix the machine, then seed again.',
        });
      }
    }
  }
  return { digest: ends.provides.digest, consumerDigest: ends.consumes.digest };
}
