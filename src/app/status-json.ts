/**
 * `baton status --json`: ONE object, shaped for monitoring (docs/status-json.md). Field
 * names are snake_case like the published document; every field is always present (null when
 * it does not apply) so a consumer never has to guess whether a missing key means "no".
 */
import type { BatonError } from '../errors.js';
import { couldNotRead, statusExitCode, type StatusReport } from './status-report.js';
import type { Suggester } from '../suggest-command.js';
import { stepJson } from '../next-step.js';
import { errorJson, failedCommandJson, JSON_FORMATS } from './error-json.js';
import { etagShown } from '../share/confirm-binding.js';
import { describeVerdict } from './status-verdict.js';

export const STATUS_JSON_FORMAT = JSON_FORMATS.status;

/**
 * `status --json` that could not even start (a config error, a bad flag): still ONE JSON object
 * on stdout, so a monitor parsing stdout sees why instead of an empty read, with the exit code
 * the process ends with.
 */
export function statusErrorJson(error: BatonError) {
  return { format: STATUS_JSON_FORMAT, ...failedCommandJson(error) };
}

export function statusJson(report: StatusReport, baton: string | Suggester = 'baton') {
  const { local, published, verdict } = report;
  const words = describeVerdict(verdict, baton);
  const s: Suggester =
    typeof baton === 'string' ? { prefix: baton, inventory: undefined, terminal: true } : baton;
  return {
    format: STATUS_JSON_FORMAT,
    deployment: report.deployment,
    state_dir: report.stateDir,
    store: report.storeUrl,
    read_at: report.readAt.toISOString(),
    exit_code: statusExitCode(report),
    could_not_read: couldNotRead(report),
    verdict: {
      kind: verdict.kind,
      label: words.label,
      headline: words.headline,
      next: words.next,
      next_step: words.step ? stepJson(s, words.step) : null,
      lineage: verdict.kind === 'refuse' ? verdict.lineage.kind : null,
      // "left behind" is a proof only when the handover signature verified with this host's key.
      handover:
        verdict.kind === 'refuse' && verdict.lineage.kind === 'left-behind'
          ? verdict.lineage.proof.kind
          : null,
    },
    local: {
      state: local.state,
      fingerprint: local.state === 'whole' ? local.current.fingerprint : null,
      not_after: local.state === 'whole' ? local.current.notAfter.toISOString() : null,
      previous_fingerprint: local.state === 'whole' ? (local.previous?.fingerprint ?? null) : null,
      overlap_since: local.state === 'whole' && local.previous ? local.current.notBefore.toISOString() : null,
      marker_missing: local.state === 'whole' ? local.markerMissing : null,
      pending: local.state === 'whole' ? (local.pending ?? null) : null,
      problem: local.state === 'blocked' ? local.problem : null,
      error: local.state === 'blocked' ? errorJson(local.error, s) : null,
      unexpected: [...local.unexpected],
    },
    published: {
      state: published.state,
      location: published.location,
      fingerprint: published.state === 'present' ? published.header.fingerprint : null,
      previous_fingerprint: published.state === 'present' ? published.header.previousFingerprint : null,
      not_after: published.state === 'present' ? (published.current?.notAfter.toISOString() ?? null) : null,
      published_at: published.state === 'present' ? published.header.publishedAt.raw : null,
      // Raw: JSON stays JSON (a terminal gets it through jsonForTerminal, which escapes the rest).
      published_by: published.state === 'present' ? published.header.publishedBy.raw : null,
      sealed: published.state === 'present' ? published.sealed : null,
      // The bad object's ETag, which `sync --replace-unreadable --confirm <ETAG 8>` is bound to.
      etag: published.state === 'unreadable' && published.etag ? etagShown(published.etag) : null,
      // Nothing published here: documents at neighbouring prefixes, each with its deployment.
      neighbours:
        published.state === 'none'
          ? (published.neighbours ?? []).map((n) => ({
              location: n.location,
              deployment: n.deployment ?? null,
            }))
          : null,
      error: published.state === 'unreadable' ? errorJson(published.error, s) : null,
    },
    store_check: report.storeCheck
      ? {
          enforced: report.storeCheck.enforced,
          detail: report.storeCheck.detail,
          checked_at: report.storeCheck.checkedAt,
        }
      : null,
  };
}
