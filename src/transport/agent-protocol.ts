/**
 * The one codec of the agent's protocol (docs/agent-protocol.md): the requests baton writes to
 * the agent and the answers it reads back, as text in and typed values out. Nothing here runs a
 * process; a transport hands it lines. Everything the machine said stays data: a reason is shown()
 * only where a TransportError is made of it, never printed from here.
 */

import type { SecretDigest } from '../mesh/digest.js';

/** The protocol the agent speaks; its hello on the rename channel names it, and another is refused. */
export const AGENT_PROTOCOL = 2;

/**
 * Every answer line starts with this: a login shell that prints a banner or a .bashrc that echoes
 * cannot be mistaken for one.
 */
export const ANSWER_PREFIX = '@baton ';

/** The answer a line carries, or undefined for a line that is not one (a banner, a shell's noise). */
export function answerOf(line: string): string | undefined {
  return line.startsWith(ANSWER_PREFIX) ? line.slice(ANSWER_PREFIX.length) : undefined;
}

/** The answers of a one-shot operation (`files <op>`), in order; undefined when there are not `count`. */
export function answerLines(output: string, count: number): string[] | { readonly got: number } {
  const out = output
    .split('\n')
    .map(answerOf)
    .filter((a): a is string => a !== undefined);
  if (out.length !== count || out.some((a) => a === '')) return { got: out.length };
  return out;
}

/** What a holder must run: said when it has no perl 5 (docs/agent-protocol.md, "Mode hello"). */
export const NO_PERL = 'no perl 5 — baton needs it on every holder';

/** The resolve's answer: the agent's protocol and the perl running it, or no perl at all. */
export type HelloAnswer =
  { readonly kind: 'agent'; readonly protocol: number; readonly perl: string } | { readonly kind: 'no-perl' };

/** Undefined when the output holds no hello (something else answered). */
export function decodeHello(output: string): HelloAnswer | undefined {
  for (const answer of output.split('\n').map(answerOf)) {
    if (answer === 'no-perl') return { kind: 'no-perl' };
    const hello = answer === undefined ? null : /^agent v(\d+) perl (\S+)$/.exec(answer);
    if (hello) return { kind: 'agent', protocol: Number(hello[1]), perl: hello[2]! };
  }
  return undefined;
}

/** A digest answer (`<64 hex>`, or `-` for no file) as the domain's `sha256:` form. */
export function digestOf(hex: string | undefined): SecretDigest | undefined {
  return hex && /^[0-9a-f]{64}$/.test(hex) ? (`sha256:${hex}` as SecretDigest) : undefined;
}

/** One path's three `digests` answers: its digests and mtime, its rotation record, its directory's lock. */
export interface DigestsAnswer {
  readonly live: SecretDigest | undefined;
  readonly next: SecretDigest | undefined;
  readonly prev: SecretDigest | undefined;
  readonly liveModifiedMs: number | undefined;
  readonly liveLogin: string | undefined;
  readonly record: string | undefined;
  readonly lockedBy: string | undefined;
}

export function decodeDigests(lines: readonly string[], paths: number): DigestsAnswer[] {
  return Array.from({ length: paths }, (_, i): DigestsAnswer => {
    const [live, next, modified, prev, login] = (lines[i * 3] ?? '').split(' ');
    const record = lines[i * 3 + 1] ?? '';
    const lock = lines[i * 3 + 2] ?? '';
    const seconds = Number(modified);
    return {
      live: digestOf(live),
      next: digestOf(next),
      prev: digestOf(prev),
      liveModifiedMs: modified && Number.isInteger(seconds) ? seconds * 1000 : undefined,
      liveLogin: login && login !== '-' ? login : undefined,
      record: record.startsWith('+') ? record.slice(1) : undefined,
      lockedBy: lock.startsWith('+') ? lock.slice(1) : undefined,
    };
  });
}

/** `texts`: `+<text>` or `-` per path. */
export function decodeText(answer: string): string | undefined {
  return answer.startsWith('+') ? answer.slice(1) : undefined;
}

/**
 * `textread`: `+<hex of the whole file>` or `-`. Hex that is not whole bytes is refused (an
 * answer cut short is not a shorter file): undefined with `malformed`.
 */
export function decodeWholeText(answer: string): { bytes: Buffer } | { absent: true } | { malformed: true } {
  if (answer === '-') return { absent: true };
  const hex = answer.startsWith('+') ? answer.slice(1) : undefined;
  if (hex === undefined || !/^(?:[0-9a-f]{2})*$/.test(hex)) return { malformed: true };
  return { bytes: Buffer.from(hex, 'hex') };
}

/** `textwrite`'s input: the digest it must still have, then the new text as hex (one line each). */
export function textwriteInput(expected: string, text: string): string {
  return `${expected}\n${Buffer.from(text, 'utf8').toString('hex')}\n`;
}

/** `textwrite`'s answer: written, or changed meanwhile; undefined for anything else. */
export function decodeTextwrite(answer: string): 'written' | 'changed' | undefined {
  if (answer === 'written') return 'written';
  return /^changed (?:[0-9a-f]{64}|-)$/.test(answer) ? 'changed' : undefined;
}

/** The receipt watcher's answers: a path's first line, the end of a report, or the heartbeat. */
export type WatchAnswer =
  | { readonly kind: 'text'; readonly index: number; readonly text: string | undefined }
  | { readonly kind: 'reported' }
  | { readonly kind: 'beat' };

/** Undefined for what is not an answer, or names no path of the `paths` watched. */
export function decodeWatchAnswer(line: string, paths: number): WatchAnswer | undefined {
  const answer = answerOf(line);
  if (answer === '~') return { kind: 'beat' };
  if (answer === '.') return { kind: 'reported' };
  const m = answer === undefined ? null : /^(\d+) (?:\+(.*)|-)$/.exec(answer);
  if (!m || Number(m[1]) >= paths) return undefined;
  return { kind: 'text', index: Number(m[1]), text: m[2] };
}

/** A line break inside a path would end its request line early: such a path is never sent. */
export function unsendablePath(paths: readonly string[]): string | undefined {
  return paths.find((p) => p.includes('\n'));
}

/** A host the relay may open: a name or an address, nothing the request line could split on. */
export function relayableHost(host: string): boolean {
  return /^[A-Za-z0-9.:_-]+$/.test(host);
}

const pathLines = (paths: readonly string[]) => paths.map((p) => `${p}\n`).join('');
const reloadTail = (ids: readonly string[]) => (ids.length > 0 ? ` ${ids.join(',')}` : '');

/** The rename channel's requests, each whole lines (docs/agent-protocol.md, "Requests"). */
export const channelRequest = {
  /** The machine's clock now. */
  clock: (): string => 't\n',
  /** Rename each `<path>.next` → `<path>`, then start the declared reloads named. */
  commit: (paths: readonly string[], reloads: readonly string[] = []): string =>
    `c ${paths.length}${reloadTail(reloads)}\n${pathLines(paths)}`,
  /** Declare a reload a later commit may start: the command, its bound, its environment. */
  reload: (id: string, seconds: number, command: string, env: Readonly<Record<string, string>>): string => {
    const lines = Object.entries(env).map(([k, v]) => `${k}=${v}\n`);
    return `r ${id} ${seconds} ${Buffer.from(command, 'utf8').toString('hex')} ${lines.length}\n${lines.join('')}`;
  },
  /** Open a TCP connection from the machine. */
  open: (id: string, host: string, port: number): string => `o ${id} ${host} ${port}\n`,
  write: (id: string, bytes: Buffer): string => `w ${id} ${bytes.toString('hex')}\n`,
  close: (id: string): string => `x ${id}\n`,
  /** Arm a commit on a relayed connection: renamed on ReadyForQuery after AuthenticationOk. */
  arm: (id: string, paths: readonly string[], reloads: readonly string[] = []): string =>
    `a ${id} ${paths.length}${reloadTail(reloads)}\n${pathLines(paths)}`,
};

export type SocketEvent =
  | { readonly type: 'open' }
  | { readonly type: 'data'; readonly bytes: Buffer }
  | { readonly type: 'end' }
  | { readonly type: 'error'; readonly why: string };

export type ArmOutcome =
  | { readonly type: 'renamed'; readonly atMs: number }
  | { readonly type: 'refused' }
  | { readonly type: 'failed'; readonly why: string }
  | { readonly type: 'malformed'; readonly text: string };

export type ReloadEvent =
  | { readonly type: 'line'; readonly answer: string }
  | { readonly type: 'done' }
  | { readonly type: 'skip' }
  | { readonly type: 'fail'; readonly why: string };

/**
 * A rename channel answer. `ready` comes first and once; `clock`, `renamed`, `failed` and
 * `malformed` answer the untagged requests (`t`, `c`) in the order they were sent; the tagged
 * ones (`socket`, `arm`, `reload`) name their id and come in any order between them.
 */
export type ChannelAnswer =
  | { readonly kind: 'ready'; readonly relay: boolean; readonly protocol: number | undefined }
  | { readonly kind: 'clock'; readonly atMs: number }
  | { readonly kind: 'renamed'; readonly atMs: number }
  | { readonly kind: 'failed'; readonly why: string }
  | { readonly kind: 'socket'; readonly id: string; readonly event: SocketEvent }
  | { readonly kind: 'arm'; readonly id: string; readonly outcome: ArmOutcome }
  | { readonly kind: 'reload'; readonly id: string; readonly event: ReloadEvent }
  | { readonly kind: 'malformed'; readonly text: string };

/** Nanoseconds since the epoch (at least ten digits) as milliseconds, sub-ms kept. */
export function nsToMs(text: string): number | undefined {
  return /^\d{10,}$/.test(text) ? Number(BigInt(text) / 1000n) / 1000 : undefined;
}

/** Undefined for a line that is not an answer at all (noise on the session). */
export function decodeChannelAnswer(line: string): ChannelAnswer | undefined {
  const answer = answerOf(line);
  if (answer === undefined) return undefined;
  const ready = /^ready (\d{10,})(?: (relay)(?: v(\d+))?)?$/.exec(answer);
  if (ready) return { kind: 'ready', relay: ready[2] !== undefined, protocol: numberOr(ready[3]) };
  const tagged = /^([sar]) (\S+) ?(.*)$/.exec(answer);
  if (tagged) {
    const [, tag, id, rest] = tagged as unknown as [string, 's' | 'a' | 'r', string, string];
    if (tag === 's') return { kind: 'socket', id, event: socketEvent(rest) };
    if (tag === 'a') return { kind: 'arm', id, outcome: armOutcome(rest) };
    return { kind: 'reload', id, event: reloadEvent(rest) };
  }
  const timed = /^(t|ok) (\S+)$/.exec(answer);
  const atMs = timed ? nsToMs(timed[2]!) : undefined;
  if (timed && atMs !== undefined) return { kind: timed[1] === 't' ? 'clock' : 'renamed', atMs };
  if (answer.startsWith('err ')) return { kind: 'failed', why: answer.slice(4) };
  return { kind: 'malformed', text: answer };
}

function numberOr(text: string | undefined): number | undefined {
  return text === undefined ? undefined : Number(text);
}

function socketEvent(rest: string): SocketEvent {
  if (rest === 'open') return { type: 'open' };
  if (rest === 'end') return { type: 'end' };
  if (rest.startsWith('err ')) return { type: 'error', why: rest.slice(4) };
  const data = /^d ((?:[0-9a-f]{2})+)$/.exec(rest);
  if (data) return { type: 'data', bytes: Buffer.from(data[1]!, 'hex') };
  return { type: 'error', why: `the machine answered "${rest}" for the connection` };
}

function armOutcome(rest: string): ArmOutcome {
  if (rest === 'refused') return { type: 'refused' };
  if (rest.startsWith('err ')) return { type: 'failed', why: rest.slice(4) };
  const atMs = rest.startsWith('ok ') ? nsToMs(rest.slice(3)) : undefined;
  return atMs === undefined ? { type: 'malformed', text: rest } : { type: 'renamed', atMs };
}

function reloadEvent(rest: string): ReloadEvent {
  if (rest === '.') return { type: 'done' };
  if (rest === 'skip') return { type: 'skip' };
  if (rest.startsWith('fail ')) return { type: 'fail', why: rest.slice(5) };
  return { type: 'line', answer: `${ANSWER_PREFIX}${rest}` };
}

/**
 * A `serve` request (docs/agent-protocol.md, "Mode serve") for what a one-shot run would be
 * asked with `args` (`hello`, or `files <op> <path>…`) and `input` on its fd 3: the request
 * line, the paths, then the input's lines. `root` (the local transport's one agent for every
 * machine root of this host) goes on the request line in hex: a path may hold any byte.
 */
export function serveRequest(args: readonly string[], input = '', root?: string): string {
  const [mode, op = '', ...paths] = args;
  if (mode === 'hello') return 'hello\n';
  const lines = input === '' ? 0 : input.replace(/\n$/, '').split('\n').length;
  const at = root === undefined ? '' : ` ${Buffer.from(root, 'utf8').toString('hex')}`;
  return `files ${op} ${paths.length} ${lines}${at}\n${paths.map((p) => `${p}\n`).join('')}${lines > 0 ? input.replace(/\n?$/, '\n') : ''}`;
}

/**
 * The arguments of the mode `serve` (docs/agent-protocol.md, "Mode serve"): its idle seconds,
 * then the requests its command carries, in hex (a path may hold any byte, and hex holds none a
 * login shell reads), answered before the agent reads its stdin at all.
 */
export function serveArgs(idleSeconds: number, carried = ''): string[] {
  return [
    'serve',
    String(idleSeconds),
    ...(carried === '' ? [] : [Buffer.from(carried, 'utf8').toString('hex')]),
  ];
}

/** One line of a `serve` answer: the end of a request (ok, or its reason), or one of its answer lines. */
export type ServeLine = { kind: 'ok' } | { kind: 'err'; why: string } | { kind: 'line'; line: string };

export function decodeServeLine(line: string): ServeLine {
  if (line === '@baton end ok') return { kind: 'ok' };
  if (line.startsWith('@baton end err ')) return { kind: 'err', why: line.slice(15) };
  return { kind: 'line', line };
}
