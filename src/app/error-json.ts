/**
 * An error as the `--json` commands print it (docs/cli.md, "JSON output"): in a report that
 * carries one (status's local and published sides) and as the ONE object a command prints
 * when it fails, so a script parsing stdout always reads why, never an empty stream.
 */
import type { BatonError } from '../errors.js';
import type { Suggester } from '../suggest-command.js';
import { renderSaid, saidSteps } from '../next-step.js';

/**
 * The `format` of the commands whose report names one: their failure names it too, so a
 * consumer that checks the format first reads a failure as the same kind of object.
 */
export const JSON_FORMATS = {
  status: 'baton.status/1',
  version: 'baton.version/1',
} as const;

/** The format `command` (its words: `mesh status`) names, if its report names one. */
export function jsonFormatOf(command: string): string | undefined {
  return Object.hasOwn(JSON_FORMATS, command)
    ? JSON_FORMATS[command as keyof typeof JSON_FORMATS]
    : undefined;
}

const PLAIN: Suggester = { prefix: 'baton', inventory: undefined, terminal: true };

/**
 * `reason` is the structured why a store error or a refusal carries (unreachable, denied,
 * timed-out, …; null for the others): a monitor branches on it, never on the wording of `what`.
 */
export function errorJson(error: BatonError, s?: Suggester) {
  const next = error.next === undefined ? null : s && error.said ? renderSaid(s, error.said) : error.next;
  const steps = error.said ? saidSteps(s ?? PLAIN, error.said) : [];
  return {
    code: error.code,
    reason: error.reason ?? null,
    what: error.what,
    where: error.where ?? null,
    next,
    next_steps: steps,
  };
}

/**
 * A `--json` command that failed (a config error, a bad flag, a store that did not answer):
 * the exit code the process ends with, and the error. A command whose report names its
 * format puts that first (statusErrorJson).
 */
export function failedCommandJson(error: BatonError) {
  return { exit_code: error.exitCode, error: errorJson(error) };
}
