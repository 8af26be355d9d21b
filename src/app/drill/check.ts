/**
 * One check the drill makes before it lets the operator move on. A check reads the real
 * sandbox (the files on each host, the published document, PostgreSQL logins) and never
 * trusts what a view said it did.
 */
export interface CheckResult {
  /** A sentence of what must be true, e.g. "ctl-b holds the published authority". */
  readonly label: string;
  readonly ok: boolean;
  /** What was found, in words (fingerprints, machines); never a secret. */
  readonly detail?: string;
}

export function pass(label: string, detail?: string): CheckResult {
  return detail === undefined ? { label, ok: true } : { label, ok: true, detail };
}

export function fail(label: string, detail: string): CheckResult {
  return { label, ok: false, detail };
}

export function check(label: string, ok: boolean, detail?: string): CheckResult {
  return ok ? pass(label, detail) : fail(label, detail ?? 'not as expected');
}
