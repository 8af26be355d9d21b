/**
 * Stands in for src/authority/index.ts when imported by src/share/actions.ts (and ONLY
 * there — see bundleScript's shims): the real functions, with the real step hooks wired to a
 * stop. At the step named by CRASH_AT the process says `STOPPED <step>` on stderr and hangs,
 * so the test can SIGKILL it at exactly that instant — a crash between two durable steps,
 * without a single hook in the production code path. With CRASH_MODE=pause it carries on
 * when sent SIGUSR1: an operation held mid-flight, the lock in hand, while another runs.
 */
import {
  installAuthority as realInstall,
  setAsideAuthority as realSetAside,
  type AuthorityFiles,
  type Clock,
} from '../../../src/authority/index.js';
import type { Fingerprint } from '../../../src/pki/fingerprint-type.js';

export * from '../../../src/authority/index.js';

const stopAt = process.env.CRASH_AT ?? '';

async function step(name: string): Promise<void> {
  if (name !== stopAt) return;
  const resumed = new Promise<void>((resolve) => process.once('SIGUSR1', () => resolve()));
  process.stderr.write(`STOPPED ${name}\n`);
  // Hang with the lock held, exactly as a process that is about to be killed would.
  const keepAlive = setInterval(() => undefined, 60_000);
  if (process.env.CRASH_MODE !== 'pause') await new Promise<never>(() => undefined);
  await resumed;
  clearInterval(keepAlive);
}

export async function setAsideAuthority(stateDir: string, clock?: Clock): Promise<string> {
  const target = await realSetAside(stateDir, clock, { onStep: step });
  await step('between set-aside and install');
  return target;
}

export async function installAuthority(
  stateDir: string,
  deployment: string,
  files: AuthorityFiles,
  expected: Fingerprint,
): Promise<void> {
  return realInstall(stateDir, deployment, files, expected, { onStep: step });
}
