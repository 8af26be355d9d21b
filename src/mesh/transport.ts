/**
 * How baton touches a holder. Every operation takes a batch of paths for ONE machine, so a
 * provider with a hundred consumers costs one round trip per phase, not a hundred.
 *
 * Writes are atomic (temp file → fsync → rename) with umask 077: a reader of `<role>` sees
 * the old secret or the new one, never half of one, and never a file others can read.
 */
import type { Duplex } from 'node:stream';
import type { SecretDigest } from './digest.js';
import type { Secret } from './secret.js';
import { shown } from '../outside-text.js';

/** Where a transport stages a file beside its live path; the commit renames it into place. */
export const STAGED_SUFFIX = '.next';

/**
 * Where a provider end's previous file waits while its rotation is unfinished: a dotfile beside
 * the live one (`.<role>.prev`), which the provisioner never reads as a role. Kept at the
 * commit by a hard link (no secret passes through baton), renamed back by a roll-back, and
 * removed once the pair's consumer end is live. Where there was no live file it is EMPTY (no
 * secret is empty), and a roll-back then removes the live file: back to nothing delivered.
 */
export function previousPath(live: string): string {
  const slash = live.lastIndexOf('/');
  return `${live.slice(0, slash + 1)}.${live.slice(slash + 1)}.prev`;
}

/**
 * Where a roll-back keeps the provider end it took away (`.<role>.rolled-back`): the provisioner
 * may already have set that password in the database, and for its own superuser it is then the
 * only way back in. A roll-back never destroys the only copy of a password the database may
 * hold; the provisioner removes it once the role's receipt matches the live file again, and
 * baton when the pair finishes. A dotfile, so it is never read as a role.
 */
export function rolledBackPath(live: string): string {
  const slash = live.lastIndexOf('/');
  return `${live.slice(0, slash + 1)}.${live.slice(slash + 1)}.rolled-back`;
}

/**
 * The record beside a live path that says which rotation its staged and kept files belong to
 * (`.<name>.rotation`, a dotfile the provisioner never reads as a role). On the provider's end
 * of a pair it is the rotation's intent (src/mesh/intent.ts): written before any file of the
 * rotation is, and advanced there before each later step acts, so a leftover names its rotation
 * whoever reads it — another controller, a lost journal, an edited inventory.
 */
export function recordPath(live: string): string {
  const slash = live.lastIndexOf('/');
  return `${live.slice(0, slash + 1)}.${live.slice(slash + 1)}.rotation`;
}

/**
 * The lock of a provider directory is a flock on the DIRECTORY itself (nothing is created for
 * it, and a lock file that is unlinked while another holder has it open would let two hold two
 * files): every controller that rotates, resumes, rolls back or seeds a pair of that provider
 * holds it ON the machine for its whole run. The holder's words are in `lockHolderPath`,
 * written once it is held, removed (still held) when it is let go, and read only while it is held.
 */
export function lockHolderPath(dir: string): string {
  return `${dir}/.baton.lock.holder`;
}

/** A small non-secret text file a rotation writes on a machine (its records); atomic, 0600. */
export interface MachineRecord {
  readonly path: string;
  readonly text: string;
}

/** The provider lock as `Transport.lock` answers: held until released, or busy with the holder's words. */
export type MachineLock =
  | {
      readonly taken: true;
      /** Resolves once the machine has let the lock go. Safe to call twice. */
      release(): Promise<void>;
    }
  | { readonly taken: false; readonly holder: string | undefined };

export interface StagedFile {
  /** The LIVE path; the transport writes `<path>.next`. */
  readonly path: string;
  readonly secret: Secret;
}

/**
 * The step a machine's records announce, done right after them in the same request
 * (Transport.writeRecordsThen): the ends it stages, or the provider ends it keeps and (without
 * a rename channel to carry the renames) commits.
 */
export type AnnouncedStep =
  { readonly stage: readonly StagedFile[] } | { readonly keep: readonly string[]; readonly commit: boolean };

/** What a holder has at one live path. */
export interface FileDigests {
  readonly live: SecretDigest | undefined;
  readonly next: SecretDigest | undefined;
  /** The previous file a provider commit kept (`previousPath`), if any. */
  readonly prev?: SecretDigest | undefined;
  /** When the live file last changed (ms since the epoch), if the holder could say. */
  readonly liveModifiedMs?: number;
  /**
   * The login the live file names when it is an alternating consumer end (`user=<login> …`,
   * alternating.ts), read on the holder without reading the password; absent otherwise.
   */
  readonly liveLogin?: string;
  /** The text of the path's rotation record (`recordPath`), when there is one. */
  readonly record?: string;
  /**
   * Set while the lock of the path's directory (`lockHolderPath`) is held by someone, now: the
   * holder's words ('' when it has not said). A lock whose holder died is free (the kernel
   * released it), whatever words are left.
   */
  readonly lockedBy?: string;
}

/**
 * The adapter port. Every operation takes the signal that bounds it: when it aborts, the
 * operation stops its child process (an ssh that never answers is killed, not abandoned) and
 * rejects with a TransportError carrying the signal's reason.
 */
export interface Transport {
  readonly machine: string;
  /**
   * It calls deadline.ts's `sent(signal)` when a call actually leaves (the ssh process spawned):
   * the bound's "no answer" time starts there, and a call still queued when it runs out is
   * "not reached". Without it the time counts from the call, as before.
   */
  readonly reportsSent?: boolean;
  /** Resolves when the machine answers now; rejects with a TransportError saying why not. */
  resolve(signal: AbortSignal): Promise<void>;
  /**
   * Opens the connection to the machine ahead of its first operation, reading nothing (ssh: the
   * handshake and the agent's session, which answers its hello): a command opens the machines
   * its read reaches first while its provider locks are taken, when none may be read yet.
   * Resolves at once, having done nothing, where another is opening it.
   */
  open?(signal: AbortSignal): Promise<void>;
  /**
   * The command asks nothing more of this machine: its agent session ends as soon as it has
   * answered what it was asked (a later call starts another). A one-pass read (`mesh status`)
   * lets each machine go as it finishes, so its session ends while the others are still read:
   * about `--concurrency` ssh processes open at once rather than one per machine until the
   * command's close (at N = 50, 13 against 50).
   */
  release?(): void;
  /**
   * Writes each secret to `<path>.next` (0600, parents 0700) and returns the digest of what
   * landed in each, read back from the holder in the same round trip. All or an error.
   */
  stage(files: readonly StagedFile[], signal: AbortSignal): Promise<readonly (SecretDigest | undefined)[]>;
  /** Renames `<path>.next` → `<path>` for each path; fails if a staged file is missing. */
  commit(paths: readonly string[], signal: AbortSignal): Promise<void>;
  /** Removes `<path>.next` (and any temp file) for each path; absent is fine. */
  unstage(paths: readonly string[], signal: AbortSignal): Promise<void>;
  /**
   * Before a provider commit: links each live file to its `previousPath` (replacing an old one)
   * and returns the digest of what was kept, undefined where there was no live file.
   */
  keepPrevious(paths: readonly string[], signal: AbortSignal): Promise<readonly (SecretDigest | undefined)[]>;
  /**
   * A roll-back: keeps the live file as `rolledBackPath`, renames each `previousPath` back over
   * it (an empty one removes it) and removes the role's receipt, so the provisioner sets the previous password again and
   * confirms it whatever it had applied; false where none was kept.
   */
  restorePrevious(paths: readonly string[], signal: AbortSignal): Promise<readonly boolean[]>;
  /** Removes each `previousPath` and `rolledBackPath` (the pair finished); absent is fine. */
  discardPrevious(paths: readonly string[], signal: AbortSignal): Promise<void>;
  /**
   * A pair switched between single and alternating: removes each live provider file of the mode
   * it left, its `.next`, `previousPath`, `rolledBackPath` and its receipt; absent is fine.
   */
  retire(paths: readonly string[], signal: AbortSignal): Promise<void>;
  /** Digests of the live and staged files (never their content), the live file's mtime, its rotation record and its directory's lock. */
  digests(paths: readonly string[], signal: AbortSignal): Promise<readonly FileDigests[]>;
  /** Writes each record atomically (temp → fsync → rename, 0600, parents 0700); all or an error. */
  writeRecords(records: readonly MachineRecord[], signal: AbortSignal): Promise<void>;
  /**
   * writeRecords, then, only once every record is written, the step they announce on the same
   * machine, in ONE request: an intent and its step cost one round trip, not two (docs/benchmarks.md,
   * "Round 15: a record and its step in one request"), with the order and the crash states of the calls made in turn
   * (recordsThenInTurn). Answers as the step's stage or keepPrevious does.
   */
  writeRecordsThen(
    records: readonly MachineRecord[],
    step: AnnouncedStep,
    signal: AbortSignal,
  ): Promise<readonly (SecretDigest | undefined)[]>;
  /**
   * Takes the lock of `dir` (a flock on the directory, `lockHolderPath`) on the machine, non-blocking but for a short grace,
   * and holds it until released or until this process or its connection dies (then the
   * machine's kernel releases it). `holder` is written beside it for a second controller to read.
   */
  lock(dir: string, holder: string, signal: AbortSignal): Promise<MachineLock>;
  /** The text of small non-secret files (receipts); undefined where absent. */
  readTexts(paths: readonly string[], signal: AbortSignal): Promise<readonly (string | undefined)[]>;
  /**
   * pooler-file: one small non-secret file's whole text, every byte and line break kept (a
   * pooler's auth_file: SCRAM verifiers), with its sha256; undefined where absent. Optional:
   * without it a pooler on that machine cannot be given a verifier, and the rotation says so.
   */
  readWholeText?(path: string, signal: AbortSignal): Promise<WholeText | undefined>;
  /**
   * pooler-file: replaces `path`'s whole text with `text` only while its content still has the
   * sha256 `expected` (what readWholeText read), keeping its mode and owner; by rename, so a
   * reader sees the old file or the new one. False when it changed meanwhile (nothing written).
   */
  swapText?(path: string, expected: string, text: string, signal: AbortSignal): Promise<boolean>;
  /**
   * Watches small non-secret files (receipts) and reports them as they change: first every
   * path's current text, then each change, read on the machine every `intervalMs`. Resolves
   * when the signal aborts; rejects with a TransportError if the machine stops answering.
   * Optional: without it the receipt wait polls readTexts.
   */
  watchTexts?(
    paths: readonly string[],
    options: WatchOptions,
    onChange: (changes: readonly TextChange[]) => void,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * Opens, ahead of the renames it will carry, a channel to the machine that renames staged
   * files on request and says when it did by the machine's own clock. Optional: without it
   * the consumer commit uses commit() and the controller's clock.
   */
  openChannel?(signal: AbortSignal): Promise<RenameChannel>;
  // app-truth (docs/mesh-rotation.md, "The app, not only its file"): both optional; a transport
  // without them makes a reload fail by name and a test login refuse, never pass silently.
  /** Runs `sh -c command` on the machine, stdin closed, bounded by `timeoutMs` on the machine itself. */
  runCommand?(request: CommandRequest, signal: AbortSignal): Promise<CommandResult>;
  /**
   * A TCP stream opened FROM the machine to `host:port` (over ssh a `direct-tcpip` channel on
   * the shared connection, `ssh -W`), not yet connected: the client calls `connect()` as on a socket.
   */
  openStream?(host: string, port: number, signal: AbortSignal): Promise<MachineStream>;
  /**
   * Opens ahead, on the shared connection, a session that runs `command` (as runCommand) when
   * asked: a reload then costs no session set-up after the commit. Undefined when the machine
   * has no session to spare (the reload then opens its own when it runs).
   */
  prepareCommand?(
    command: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<PreparedCommand | undefined>;
}

/** A session opened ahead for one run of a command (Transport.prepareCommand). */
export interface PreparedCommand {
  /** Runs it with `env` (never a secret); undefined when the session had ended before (nothing ran). */
  run(env: Readonly<Record<string, string>>): Promise<CommandResult | undefined>;
  /** Ends the session if it was not run; safe to call twice. */
  close(): void;
}

/** A command to run on a machine; nothing in it is a secret (a reload reads the file itself). */
export interface CommandRequest {
  readonly command: string;
  /** Names `[A-Z_][A-Z0-9_]*`, values without NUL or newline; never a secret. */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export interface CommandResult {
  /** undefined when it was killed (its time was up, or the command was cancelled). */
  readonly exitCode: number | undefined;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** The end of what it wrote to stderr, raw and at most a few KiB: the caller bounds and redacts it. */
  readonly stderrTail: string;
}

/** What a database client speaks to: a Duplex with a socket's connect and options (node:net's shape). */
export interface MachineStream extends Duplex {
  connect(port: number, host: string): this;
  setNoDelay(noDelay?: boolean): this;
  setKeepAlive(enable?: boolean, initialDelay?: number): this;
  ref(): this;
  unref(): this;
}

export interface WatchOptions {
  /** How often the machine reads the files. */
  readonly intervalMs: number;
  /** The longest the watch may run: a remote reader ends by itself after this even if nobody stops it. */
  readonly forMs: number;
}

/** One watched path's text (undefined: absent), by its index in the paths watched. */
export interface TextChange {
  readonly index: number;
  readonly text: string | undefined;
}

/** A machine's clock against the controller's, measured over one request and its answer. */
export interface ClockOffset {
  /** The machine's clock minus the controller's, in ms (0 for a local machine). */
  readonly offsetMs: number;
  /** How far the offset may be off: half the round trip it was measured over. */
  readonly withinMs: number;
}

export interface RenameChannel {
  /** The machine's clock against the controller's, measured when the channel opened (and refined after). */
  readonly clock: ClockOffset;
  /** Renames `<path>.next` → `<path>` like commit(); resolves with when the last rename happened, ms since the epoch by the MACHINE's clock. */
  commit(paths: readonly string[], signal: AbortSignal): Promise<number>;
  /** Ends the channel; safe to call twice. */
  close(): void;
  /** app-rtt: where the machine's end can (perl on it), TCP relayed from the machine and commits that carry their reloads. */
  readonly relay?: ChannelRelay;
  /**
   * app-rtt: settles once no reload the channel started is still to answer. close() ends the
   * requests; whoever owns the session ends it only after this, or the outcome would be lost.
   */
  whenIdle?(): Promise<void>;
}

/**
 * app-rtt (docs/mesh-rotation.md "What the test login and the reload cost"): the rename channel's
 * process on the machine opens TCP connections from there and relays their bytes, and runs a
 * consumer's reload right after its renames, so neither costs a round trip of its own.
 */
export interface ChannelRelay {
  /** A TCP connection FROM the machine to `host:port`, its bytes relayed on the channel; resolves once connected. */
  openSocket(host: string, port: number, signal: AbortSignal): Promise<RelayedSocket>;
  /**
   * Renames like commit(), then starts each reload on the machine (stdin closed, bounded there):
   * `at` as commit() says it; each reload's outcome as it ends (undefined: not started, nothing ran).
   */
  commitThen(
    paths: readonly string[],
    reloads: readonly CommandRequest[],
    signal: AbortSignal,
  ): Promise<CommitThen>;
}

export interface CommitThen {
  readonly at: number;
  readonly reloads: readonly Promise<CommandResult | undefined>[];
}

/** A PostgreSQL connection relayed by the channel (ChannelRelay.openSocket). */
export interface RelayedSocket extends MachineStream {
  /**
   * The ARMED commit: when the server on this socket says ReadyForQuery after AuthenticationOk,
   * the MACHINE renames `paths` (as commit()) and starts `reloads`; an ErrorResponse, a close or
   * the socket's end first renames nothing. Sent before the login's first byte, so the rename
   * costs no round trip after the verdict. Resolves with what the machine did — the truth about
   * the files, whatever the controller's own reading of the login (its bytes may still be in flight).
   */
  arm(paths: readonly string[], reloads: readonly CommandRequest[]): Promise<ArmResult>;
}

export type ArmResult =
  | {
      readonly moved: true;
      readonly at: number;
      readonly reloads: readonly Promise<CommandResult | undefined>[];
    }
  | { readonly moved: false; readonly reason: string };

/** A RenameChannel whose every rename is bounded by the command's one timeout. */
export interface BoundRenameChannel {
  /** Read when needed: the channel may refine it after opening. */
  readonly clock: ClockOffset;
  commit(paths: readonly string[]): Promise<number>;
  close(): void;
  /** As RenameChannel.relay: opening a socket and commitThen bounded by the timeout (an armed commit by the login's). */
  readonly relay?: BoundChannelRelay;
}

export interface BoundChannelRelay {
  openSocket(host: string, port: number, until: AbortSignal): Promise<RelayedSocket>;
  commitThen(paths: readonly string[], reloads: readonly CommandRequest[]): Promise<CommitThen>;
}

/**
 * What the mesh code calls: a Transport whose every operation is already bounded by the
 * command's one timeout and cancelled with the command (bound-transport.ts), so no caller can
 * forget a bound or invent a second one.
 */
export interface BoundTransport {
  readonly machine: string;
  resolve(): Promise<void>;
  /** As Transport.open, bounded by the timeout; `until` stops it (the opening is not needed any more). */
  open?(until: AbortSignal): Promise<void>;
  /** As Transport.release. */
  release?(): void;
  stage(files: readonly StagedFile[]): Promise<readonly (SecretDigest | undefined)[]>;
  commit(paths: readonly string[]): Promise<void>;
  unstage(paths: readonly string[]): Promise<void>;
  keepPrevious(paths: readonly string[]): Promise<readonly (SecretDigest | undefined)[]>;
  restorePrevious(paths: readonly string[]): Promise<readonly boolean[]>;
  discardPrevious(paths: readonly string[]): Promise<void>;
  retire(paths: readonly string[]): Promise<void>;
  digests(paths: readonly string[]): Promise<readonly FileDigests[]>;
  writeRecords(records: readonly MachineRecord[]): Promise<void>;
  /** As Transport.writeRecordsThen: one bound for the records and their step. */
  writeRecordsThen(
    records: readonly MachineRecord[],
    step: AnnouncedStep,
  ): Promise<readonly (SecretDigest | undefined)[]>;
  /** As Transport.lock: taking it bounded by the timeout; holding it lasts until release or the command is cancelled. */
  lock(dir: string, holder: string): Promise<MachineLock>;
  readTexts(paths: readonly string[]): Promise<readonly (string | undefined)[]>;
  /** As Transport.readWholeText, bounded by the timeout. */
  readWholeText?(path: string): Promise<WholeText | undefined>;
  /** As Transport.swapText, bounded by the timeout. */
  swapText?(path: string, expected: string, text: string): Promise<boolean>;
  /**
   * As Transport.watchTexts, until `until` aborts (the caller's deadline) or the command is
   * cancelled: a watch is meant to outlast one operation's timeout.
   */
  watchTexts?(
    paths: readonly string[],
    options: WatchOptions,
    onChange: (changes: readonly TextChange[]) => void,
    until: AbortSignal,
  ): Promise<void>;
  /** As Transport.openChannel: the opening and each rename bounded by the timeout. */
  openChannel?(): Promise<BoundRenameChannel>;
  /** As Transport.runCommand, bounded by its own `timeoutMs` plus the command's timeout. */
  runCommand?(request: CommandRequest): Promise<CommandResult>;
  /** As Transport.openStream; `until` ends the stream (the caller's deadline). */
  openStream?(host: string, port: number, until: AbortSignal): Promise<MachineStream>;
  /** As Transport.prepareCommand; the session lasts until run or closed, or the command is cancelled. */
  prepareCommand?(command: string, timeoutMs: number): Promise<PreparedCommand | undefined>;
}

/** A file's whole text as readWholeText read it, and the sha256 (hex) of its bytes: swapText's `expected`. */
export interface WholeText {
  readonly text: string;
  readonly sha256: string;
}

/** The transport of a machine, by inventory name (built by the commands, passed down). */
export type TransportFor = (machine: string) => BoundTransport;

/**
 * A transport failure, in words an operator can act on; never carries a secret. Its reason is
 * shown() here, once for every caller: it quotes what the machine said (ssh's last stderr line, a
 * remote script's `err` answer, a path from the inventory), and a hostile machine's ESC or line
 * break must not draw over the summary it lands in. shown() leaves already-shown text as it is.
 */
export class TransportError extends Error {
  readonly reason: string;
  constructor(
    readonly machine: string,
    reason: string,
    /**
     * The machine could not be reached (no connection, no answer in time), as opposed to
     * answering with a failure: clean-up does not wait on it a second time.
     */
    readonly unreachable = false,
  ) {
    const said = shown(reason, TRANSPORT_REASON_MAX);
    super(`${shown(machine)}: ${said}`);
    this.reason = said;
    this.name = 'TransportError';
  }
}

/** A reason is baton's sentence around what the machine said: longer than one outside string may be. */
const TRANSPORT_REASON_MAX = 1000;

/** The TransportError an aborted operation rejects with: the signal's reason, in words. */
export function abortedError(machine: string, what: string, signal: AbortSignal): TransportError {
  const reason: unknown = signal.reason;
  const said = reason instanceof Error && reason.name !== 'AbortError' ? reason.message : 'cancelled';
  // Out of time (not cancelled by the operator): the machine did not answer.
  return new TransportError(
    machine,
    `${what}: ${said}`,
    reason instanceof Error && reason.name === 'NoAnswer',
  );
}

export function reasonOf(error: unknown): string {
  if (error instanceof TransportError) return error.reason;
  // A PostgreSQL or ssh error's message is written by the other side: shown, never printed raw.
  if (error instanceof Error) return shown(error.message);
  return shown(String(error));
}

/**
 * Transport.writeRecordsThen as the calls it stands for, one after another: what a transport
 * that has no single request for it does (the in-memory machines of the tests, whose every call
 * can then be failed or interrupted on its own).
 */
export async function recordsThenInTurn(
  transport: Pick<BoundTransport, 'writeRecords' | 'stage' | 'keepPrevious' | 'commit'>,
  records: readonly MachineRecord[],
  step: AnnouncedStep,
): Promise<readonly (SecretDigest | undefined)[]> {
  if (records.length > 0) await transport.writeRecords(records);
  if ('stage' in step) return transport.stage(step.stage);
  const kept = await transport.keepPrevious(step.keep);
  if (step.commit) await transport.commit(step.keep);
  return kept;
}
