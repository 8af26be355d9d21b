/**
 * The `ssh` transport: one `ssh -o BatchMode=yes` per operation per machine, the remote side
 * a short POSIX sh script (remote-scripts.ts). BatchMode because a password or host-key prompt
 * on a holder would hang a rotation mid-delivery; the host key is checked as the inventory
 * or the operator's ssh config says, never silently accepted. With a connection share
 * (ssh-connection-share.ts) every operation of one command rides the machine's one connection.
 */
import type { SecretDigest } from '../mesh/digest.js';
import type { SshTarget } from '../mesh/inventory.js';
import { ANSWER_PREFIX, COMMIT, DIGESTS, DISCARD_PREVIOUS, KEEP_PREVIOUS, READ_TEXTS, RESTORE_PREVIOUS, STAGE, UNSTAGE, remoteCommand } from './remote-scripts.js';
import { runProcess, type ExecFn } from './run-process.js';
import type { SshConnectionShare } from './ssh-connection-share.js';
import { abortedError, TransportError, type FileDigests, type Transport } from '../mesh/transport.js';

export interface SshTransportOptions {
  /** Replaces the process runner (tests record every child's argv and environment). */
  readonly exec?: ExecFn;
  /** The ssh program (default `ssh` on PATH). */
  readonly sshPath?: string;
  /** The command's connection share: one TCP connection and handshake per machine. */
  readonly share?: SshConnectionShare;
}

/** The ssh argv up to and including the destination; the remote command is appended. */
export function sshArgs(target: SshTarget, share?: SshConnectionShare): string[] {
  const args = ['-o', 'BatchMode=yes', '-o', `ConnectTimeout=${target.connectTimeout}`, '-T'];
  if (share) args.push(...share.options());
  if (target.config) args.push('-F', target.config);
  if (target.port !== undefined) args.push('-p', String(target.port));
  if (target.identity) args.push('-i', target.identity, '-o', 'IdentitiesOnly=yes');
  if (target.knownHosts) args.push('-o', `UserKnownHostsFile=${target.knownHosts}`);
  if (target.strictHostKeyChecking) args.push('-o', `StrictHostKeyChecking=${target.strictHostKeyChecking}`);
  if (target.user) args.push('-l', target.user);
  args.push('--', target.host);
  return args;
}

export function sshTransport(machine: string, target: SshTarget, options: SshTransportOptions = {}): Transport {
  const exec = options.exec ?? runProcess;
  options.share?.use(target);
  // No timeout of its own: the caller's signal is the one bound (bound-transport.ts), and an
  // aborted signal stops this ssh rather than leaving it to outlive the command.
  const run = async (what: string, command: string, signal: AbortSignal, input?: string): Promise<string> => {
    if (signal.aborted) throw abortedError(machine, what, signal);
    const result = await exec(options.sshPath ?? 'ssh', [...sshArgs(target, options.share), command], { signal, ...(input === undefined ? {} : { input }) });
    if (result.failedToStart) throw new TransportError(machine, `could not start ssh: ${result.failedToStart}`);
    if (result.cancelled) throw abortedError(machine, what, signal);
    if (result.exitCode !== 0) {
      const said = lastLine(result.stderr);
      if (result.exitCode === 255) throw new TransportError(machine, `ssh failed${said ? `: ${said}` : ` (exit 255)`}`);
      throw new TransportError(machine, `${what} failed on the machine${said ? `: ${said}` : ` (exit ${result.exitCode})`}`);
    }
    return result.stdout;
  };
  const lines = (text: string, count: number, what: string): string[] => {
    const out = text
      .split('\n')
      .filter((line) => line.startsWith(ANSWER_PREFIX))
      .map((line) => line.slice(ANSWER_PREFIX.length));
    if (out.length !== count || out.some((l) => l === '')) throw new TransportError(machine, `${what}: the machine answered ${out.length} of ${count} lines`);
    return out;
  };
  return {
    machine,
    resolve: async (signal) => {
      await run('resolve', 'true', signal);
    },
    stage: async (files, signal) => {
      if (files.length === 0) return [];
      const input = files.map((f) => `${f.secret.reveal()}\n`).join('');
      const out = lines(await run('staging', remoteCommand(STAGE, files.map((f) => f.path)), signal, input), files.length, 'staging');
      return out.map(asDigest);
    },
    commit: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('commit', remoteCommand(COMMIT, paths), signal);
    },
    unstage: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('unstage', remoteCommand(UNSTAGE, paths), signal);
    },
    keepPrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      return lines(await run('keeping the previous file', remoteCommand(KEEP_PREVIOUS, paths), signal), paths.length, 'keeping the previous file').map(asDigest);
    },
    restorePrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      return lines(await run('restoring the previous file', remoteCommand(RESTORE_PREVIOUS, paths), signal), paths.length, 'restoring the previous file').map((l) => l === 'restored');
    },
    discardPrevious: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('removing the previous file', remoteCommand(DISCARD_PREVIOUS, paths), signal);
    },
    digests: async (paths, signal) => {
      if (paths.length === 0) return [];
      const out = lines(await run('reading digests', remoteCommand(DIGESTS, paths), signal), paths.length, 'reading digests');
      return out.map((line): FileDigests => {
        const [live, next, modified, prev] = line.split(' ');
        const seconds = Number(modified);
        const kept = asDigest(prev);
        return { live: asDigest(live), next: asDigest(next), ...(kept ? { prev: kept } : {}), ...(modified && Number.isInteger(seconds) ? { liveModifiedMs: seconds * 1000 } : {}) };
      });
    },
    readTexts: async (paths, signal) => {
      if (paths.length === 0) return [];
      const out = lines(await run('reading', remoteCommand(READ_TEXTS, paths), signal), paths.length, 'reading');
      return out.map((line) => (line.startsWith('+') ? line.slice(1) : undefined));
    },
  };
}

function asDigest(hex: string | undefined): SecretDigest | undefined {
  return hex && /^[0-9a-f]{64}$/.test(hex) ? (`sha256:${hex}` as SecretDigest) : undefined;
}

/** The line that says what went wrong, without ssh's own `ssh: ` prefix. */
function lastLine(text: string): string {
  return (text.trim().split('\n').filter((l) => l.trim() !== '').pop()?.trim() ?? '').replace(/^ssh: /, '');
}
