/**
 * Looks for secrets where they must never be: argv and environment of child processes, the
 * journal, logs, captured screens. A secret counts as found in any encoding an accident would
 * produce — raw, hex (either case), base64 (standard or URL-safe, at any alignment inside a
 * longer base64 stream, across PEM line breaks) — because "we printed it in hex" is still a
 * leak. Key material is matched by its DER bytes and by its private scalar, plus any PEM
 * private-key header at all.
 */
import { createPrivateKey } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

export interface Secret {
  /** A label for the report (never the value). */
  readonly name: string;
  readonly value: Uint8Array | string;
}

export interface Haystack {
  /** Where the text came from: "journal", "/proc/123/environ", "screen 4"… */
  readonly name: string;
  readonly data: Uint8Array | string;
}

export interface SecretHit {
  readonly haystack: string;
  readonly secret: string;
  readonly encoding: string;
}

const PEM_PRIVATE = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/** Every (haystack, secret, encoding) where a secret was found; empty means clean. */
export function scanForSecrets(haystacks: readonly Haystack[], secrets: readonly Secret[]): SecretHit[] {
  const needles = secrets.flatMap((secret) => needlesOf(secret));
  const hits: SecretHit[] = [];
  for (const haystack of haystacks) {
    const raw = Buffer.from(haystack.data);
    const text = raw.toString('latin1');
    // PEM and wrapped base64 break lines every 64/76 characters: search a copy without any
    // whitespace as well, so a secret split across lines is still found.
    const squeezed = text.replace(/[\s\0]+/g, '');
    if (PEM_PRIVATE.test(text))
      hits.push({ haystack: haystack.name, secret: 'PEM private key', encoding: 'pem header' });
    for (const needle of needles) {
      const found = needle.caseInsensitive
        ? text.toLowerCase().includes(needle.text.toLowerCase()) ||
          squeezed.toLowerCase().includes(needle.text.toLowerCase())
        : text.includes(needle.text) || squeezed.includes(needle.text);
      if (found) hits.push({ haystack: haystack.name, secret: needle.secret, encoding: needle.encoding });
    }
  }
  return dedupe(hits);
}

/**
 * The secrets a PEM private key stands for: its DER bytes and its private scalar (from the
 * JWK `d`), so the key is found however it was re-encoded.
 */
export function keyMaterial(name: string, pem: string | Uint8Array): Secret[] {
  const text = Buffer.from(pem).toString('utf8');
  const body = text.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const der = Buffer.from(body, 'base64');
  const out: Secret[] = [{ name: `${name} (DER)`, value: der }];
  const jwk = createPrivateKey({ key: text, format: 'pem' }).export({ format: 'jwk' });
  if (typeof jwk.d === 'string')
    out.push({ name: `${name} (private scalar)`, value: Buffer.from(jwk.d, 'base64url') });
  return out;
}

interface Needle {
  readonly secret: string;
  readonly encoding: string;
  readonly text: string;
  readonly caseInsensitive: boolean;
}

/** Shorter needles would match by chance in kilobytes of logs. */
const MIN_NEEDLE = 12;

function needlesOf(secret: Secret): Needle[] {
  const bytes = Buffer.from(secret.value);
  const out: Needle[] = [];
  const add = (encoding: string, text: string, caseInsensitive = false) => {
    if (text.length >= MIN_NEEDLE) out.push({ secret: secret.name, encoding, text, caseInsensitive });
  };
  add('raw', bytes.toString('latin1'));
  add('hex', bytes.toString('hex'), true);
  // Inside a longer base64 stream the secret starts at any byte offset mod 3; the bytes from
  // the next 3-byte boundary on encode identically whatever came before them.
  for (let skip = 0; skip < 3; skip += 1) {
    const usable = Math.floor((bytes.length - skip) / 3) * 3;
    if (usable <= 0) continue;
    const chunk = bytes.subarray(skip, skip + usable);
    add(`base64 (offset ${skip})`, chunk.toString('base64'));
    add(`base64url (offset ${skip})`, chunk.toString('base64url'));
  }
  return out;
}

function dedupe(hits: SecretHit[]): SecretHit[] {
  const seen = new Set<string>();
  return hits.filter((hit) => {
    const key = `${hit.haystack}\0${hit.secret}\0${hit.encoding}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The pids below `root` (children, grandchildren…), from /proc/<pid>/stat's ppid field. */
export function descendantsOf(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      // The command name is in parentheses and may itself contain spaces or parentheses.
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(after[1]));
    } catch {
      // The process exited between readdir and read.
    }
  }
  const out: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [pid, ppid] of parents) {
      if (ppid === parent && !out.includes(pid)) {
        out.push(pid);
        frontier.push(pid);
      }
    }
  }
  return out;
}

/** argv and environment of one process as haystacks (empty when it already exited). */
export function procHaystacks(pid: number): Haystack[] {
  const out: Haystack[] = [];
  for (const part of ['cmdline', 'environ'] as const) {
    try {
      out.push({ name: `/proc/${pid}/${part}`, data: readFileSync(`/proc/${pid}/${part}`) });
    } catch {
      // Gone already: what it showed while alive was caught by an earlier poll, or never seen.
    }
  }
  return out;
}

/**
 * Polls the argv and environment of every descendant of `roots` until stopped, keeping each
 * distinct text seen. Polling can miss a process that lives shorter than the interval: pair it
 * with a PATH wrapper (see `recordingWrapper`) for the commands that must be seen every time.
 */
export function watchProcesses(
  roots: () => readonly number[],
  intervalMs = 5,
): {
  stop(): Haystack[];
  readonly seenPids: Set<number>;
} {
  const seen = new Map<string, Haystack>();
  const seenPids = new Set<number>();
  const poll = () => {
    for (const root of roots()) {
      for (const pid of [root, ...descendantsOf(root)]) {
        seenPids.add(pid);
        for (const haystack of procHaystacks(pid)) {
          const key = `${haystack.name}\0${Buffer.from(haystack.data).toString('latin1')}`;
          if (!seen.has(key)) seen.set(key, haystack);
        }
      }
    }
  };
  const timer = setInterval(poll, intervalMs);
  poll();
  return {
    seenPids,
    stop() {
      clearInterval(timer);
      poll();
      return [...seen.values()];
    },
  };
}

/**
 * A shell script that appends its argv and environment (NUL-separated) to `logFile`, then
 * execs `real`. Put it first on PATH under the command's name: every spawn is recorded,
 * however short-lived.
 */
export function recordingWrapper(real: string, logFile: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    `{ printf 'ARGV\\0'; printf '%s\\0' "$0" "$@"; printf 'ENV\\0'; env -0; } >> ${q(logFile)}`,
    `exec ${q(real)} "$@"`,
    '',
  ].join('\n');
}
