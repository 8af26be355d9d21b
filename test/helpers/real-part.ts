/**
 * Suites that need a real part (root, sshd). Under CI a missing part FAILS the file — a CI
 * that quietly lost its sshd would otherwise report the ssh transport as tested. Off CI the
 * suite is listed as a todo naming what is missing, so the gap shows in the run's summary.
 */
import { describe, it } from 'vitest';

export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';
}

/** Throws under CI when `missing` names a part; true when the part is there. */
export function partPresent(
  name: string,
  missing: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (missing === undefined) return true;
  if (isCI(env))
    throw new Error(
      `${name} cannot run: ${missing}. Under CI=true a missing part fails the run instead of skipping it.`,
    );
  return false;
}

/** `describe` for a suite that needs a real part. */
export function describeWithPart(missing: string | undefined, name: string, body: () => void): void {
  if (partPresent(name, missing)) describe(name, body);
  else it.todo(`${name} — not run here: ${missing}`);
}

/** `it` for a test that needs a real part. */
export function itWithPart(
  missing: string | undefined,
  name: string,
  body: () => Promise<void> | void,
  timeout?: number,
): void {
  if (partPresent(name, missing)) it(name, body, timeout);
  else it.todo(`${name} — not run here: ${missing}`);
}
