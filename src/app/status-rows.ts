/**
 * The LOCAL and PUBLISHED panels as rows of label + value, computed once for every way status
 * is shown (Ink panels, plain text), so a field never reads differently on two outputs.
 */
import { layoutOf } from '../authority/index.js';
import { NOT_BEFORE_BACKDATE_MS } from '../pki/backdate.js';
import type { LocalAuthority } from '../authority/types.js';
import type { PublishedAuthority } from '../share/types.js';
import { etagShown } from '../share/confirm-binding.js';
import { nextStep, renderStep } from '../next-step.js';
import { OutsideText, shown } from '../outside-text.js';
import { storeAtRestSeal } from '../store/store-url.js';
import type { Suggester } from '../suggest-command.js';
import type { StatusReport, StoreCheckRecord } from './status-report.js';

/** What status says of a PKCS#8 key (src/pki/inspect-pair.ts `isPkcs8Key`). */
const BILLET_CANNOT_PARSE =
  'PKCS#8 ("PRIVATE KEY"): billet cannot parse it (it reads SEC1 "EC PRIVATE KEY", x509.ParseECPrivateKey); convert it with openssl ec -in ca.key -out ca.key.sec1, check, then move it into place';

export interface FingerprintValue {
  readonly text: string;
  /** Positions (in `text`) that differ from the other side's fingerprint; empty when equal. */
  readonly differs: readonly number[];
}

export type PanelRow =
  | { readonly kind: 'text'; readonly label: string; readonly value: string }
  | { readonly kind: 'fingerprint'; readonly label: string; readonly value: FingerprintValue };

export interface PanelRows {
  readonly title: 'LOCAL' | 'PUBLISHED';
  /** Where this side lives: the ca/ dir, or the store's document location. */
  readonly where: string;
  readonly rows: readonly PanelRow[];
}

/**
 * Indices where two fingerprints differ, so the eye is led to them (a caret line under the
 * text survives NO_COLOR). Characters past the shorter one all count as different.
 */
export function fingerprintDiff(a: string, b: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) out.push(i);
  return out;
}

/** A caret under every differing position; '' when nothing differs. */
export function caretLine(differs: readonly number[]): string {
  if (differs.length === 0) return '';
  const width = Math.max(...differs) + 1;
  let line = '';
  for (let i = 0; i < width; i++) line += differs.includes(i) ? '^' : ' ';
  return line;
}

/** The one time format on screens (JSON keeps RFC 3339): `2026-11-30 15:05 UTC`. */
export function formatTime(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** When a read was made, to the second: under --watch it is the one sign that a read happened. */
export function formatReadTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A stored RFC 3339 time in the screen format; text that is not a time is shown as it is. */
export function formatStoredTime(stored: OutsideText | string): string {
  // A time read from a file or the store: parsed, or else shown as outside text, never raw.
  const text = typeof stored === 'string' ? new OutsideText(stored) : stored;
  const at = Date.parse(text.raw);
  return Number.isNaN(at) ? text.shown(40) : formatTime(new Date(at));
}

/**
 * The overlap, honestly, and one time for it on the screen and in JSON: the new certificate's
 * NotBefore, which `--json` gives as `overlap_since`. It is backdated (src/pki/backdate.ts), so
 * a bare "since 14:05" for a rotation made at 15:05 read as a wrong clock, and showing the
 * rotation's time instead made the screen and JSON an hour apart: both times are named.
 */
function overlapText(notBefore: Date): string {
  const rotated = new Date(notBefore.getTime() + NOT_BEFORE_BACKDATE_MS);
  return `since ${formatTime(notBefore)} (the NotBefore, backdated ${NOT_BEFORE_BACKDATE_MS / 3_600_000} h: rotated about ${formatTime(rotated).slice(11)})`;
}

function localFingerprint(local: LocalAuthority): string | undefined {
  return local.state === 'whole' ? local.current.fingerprint : undefined;
}

function publishedFingerprint(published: PublishedAuthority): string | undefined {
  return published.state === 'present' ? published.header.fingerprint : undefined;
}

function fingerprintRow(label: string, mine: string, other: string | undefined): PanelRow {
  return {
    kind: 'fingerprint',
    label,
    value: { text: mine, differs: other === undefined ? [] : fingerprintDiff(mine, other) },
  };
}

export function localRows(report: StatusReport): PanelRows {
  const local = report.local;
  const other = publishedFingerprint(report.published);
  const where = layoutOf(report.stateDir).caDir;
  switch (local.state) {
    case 'fresh':
      return {
        title: 'LOCAL',
        where,
        rows: [
          { kind: 'text', label: 'state', value: 'fresh: no authority and no marker (never held one)' },
          ...unexpectedRows(local.unexpected),
        ],
      };
    case 'lost':
      return {
        title: 'LOCAL',
        where,
        rows: [
          {
            kind: 'text',
            label: 'state',
            value: 'LOST: the marker says this host held an authority, but ca/ is empty',
          },
          ...unexpectedRows(local.unexpected),
        ],
      };
    case 'blocked':
      return {
        title: 'LOCAL',
        where,
        rows: [
          { kind: 'text', label: 'state', value: `${local.problem}: ${local.error.what}` },
          ...(local.error.where ? [{ kind: 'text' as const, label: 'where', value: local.error.where }] : []),
          ...unexpectedRows(local.unexpected),
        ],
      };
    case 'whole': {
      const rows: PanelRow[] = [
        fingerprintRow('fingerprint', local.current.fingerprint, other),
        {
          kind: 'text',
          label: 'state',
          // INTERRUPTED IS NOT WHOLE: billet b2b42c1a does not start on half a previous pair (a
          // lone ca-previous.key included), and a lone key may be an install that stopped, not a
          // retire: the verdict names the way out, which this row does not second-guess.
          value: `${local.pending || local.repairedTear ? 'INTERRUPTED, not whole (the current pair is intact)' : 'whole'}${local.markerMissing ? ' (marker missing: the next locked operation restores it)' : ''}${local.repairedTear ? ' (torn rotation read, paired with ca-previous.key)' : ''}${local.alone === 'ca-previous.key' ? " (ca-previous.key without its certificate: billet's control plane will not start on it; the verdict below says how to finish)" : local.pending ? ` (an interrupted ca ${local.pending}: run baton ca ${local.pending} to finish it)` : ''}`,
        },
        { kind: 'text', label: 'not after', value: formatTime(local.current.notAfter) },
        // baton reads PKCS#8; billet does not: a host that looks whole here would not start billet.
        ...(local.current.keyFormat === 'pkcs8' || local.previous?.keyFormat === 'pkcs8'
          ? [{ kind: 'text' as const, label: 'key format', value: BILLET_CANNOT_PARSE }]
          : []),
      ];
      if (local.previous) {
        rows.push({ kind: 'text', label: 'overlap', value: overlapText(local.current.notBefore) });
        rows.push({
          kind: 'fingerprint',
          label: 'previous',
          value: { text: local.previous.fingerprint, differs: [] },
        });
      } else {
        rows.push({ kind: 'text', label: 'overlap', value: 'none' });
      }
      rows.push(...unexpectedRows(local.unexpected));
      return { title: 'LOCAL', where, rows };
    }
  }
}

function unexpectedRows(unexpected: readonly string[]): PanelRow[] {
  return unexpected.length === 0
    ? []
    : [
        {
          kind: 'text',
          label: 'not ours',
          // File names in ca/ are whatever was written there: shown, never printed raw.
          value: `${unexpected.map((name) => shown(name)).join(', ')} (in ca/, never read or published)`,
        },
      ];
}

/** `baton` is the command prefix with the global flags given (or the builder), for the one command a panel names. */
export function publishedRows(report: StatusReport, baton: string | Suggester = 'baton'): PanelRows {
  const published = report.published;
  const other = localFingerprint(report.local);
  const check = storeCheckRow(report.storeCheck, baton);
  switch (published.state) {
    case 'none':
      return {
        title: 'PUBLISHED',
        where: published.location,
        rows: [
          { kind: 'text', label: 'state', value: `nothing is published at ${published.location}` },
          ...(published.neighbours ?? []).map((n) => ({
            kind: 'text' as const,
            label: 'nearby',
            // A neighbour's location and deployment field are written by whoever writes the store.
            value: `${shown(n.location)} (deployment ${n.deployment === undefined ? 'unreadable' : shown(n.deployment)}${n.deployment === report.deployment ? ', THIS deployment: is --store mistyped?' : ''})`,
          })),
          check,
        ],
      };
    case 'unreadable':
      return {
        title: 'PUBLISHED',
        where: published.location,
        rows: [
          {
            kind: 'text',
            label: 'state',
            value: `${published.error.code === 'refused' ? 'cannot be used' : 'could not read'}: ${published.error.what}`,
          },
          // What a replace is bound to (--confirm <ETAG 8>); the way on itself is the verdict's Next
          // line, which carries the global flags given.
          ...(published.etag
            ? [{ kind: 'text' as const, label: 'etag', value: etagShown(published.etag) }]
            : []),
          check,
        ],
      };
    case 'present': {
      const header = published.header;
      return {
        title: 'PUBLISHED',
        where: published.location,
        rows: [
          fingerprintRow('fingerprint', header.fingerprint, other),
          {
            kind: 'text',
            label: 'not after',
            value: published.current
              ? formatTime(published.current.notAfter)
              : 'unknown (sealed; no key to open it)',
          },
          header.previousFingerprint
            ? {
                kind: 'fingerprint',
                label: 'previous',
                value: { text: header.previousFingerprint, differs: [] },
              }
            : { kind: 'text', label: 'previous', value: 'none (no rotation overlap)' },
          {
            kind: 'text',
            label: 'published',
            value: `${formatStoredTime(header.publishedAt)} by ${header.publishedBy.shown()}`,
          },
          {
            kind: 'text',
            label: 'sealed',
            value: !published.sealed
              ? sealedAtRestWords(report.storeUrl)
              : published.current
                ? 'yes (AES-256-GCM)'
                : 'yes; this host has no seal key',
          },
          check,
        ],
      };
    }
  }
}

/** Not sealed by baton: on a store that encrypts at rest (SSM), say what does. */
function sealedAtRestWords(storeUrl: string): string {
  const atRest = storeAtRestSeal(storeUrl);
  return atRest ? `not by baton; at rest by ${atRest}` : 'no';
}

function storeCheckRow(check: StoreCheckRecord | undefined, baton: string | Suggester): PanelRow {
  const s: Suggester =
    typeof baton === 'string' ? { prefix: baton, inventory: undefined, terminal: true } : baton;
  if (!check)
    return {
      kind: 'text',
      label: 'cond. writes',
      value: `not checked: run ${renderStep(s, nextStep('store check'))}`,
    };
  const at = formatStoredTime(check.checkedAt);
  return {
    kind: 'text',
    label: 'cond. writes',
    value: check.enforced
      ? `enforced (checked ${at})`
      : `NOT enforced (checked ${at}): concurrent publishes could overwrite each other`,
  };
}
