/**
 * The `ssh` transport: one `ssh -o BatchMode=yes` per operation per machine, the remote side
 * a short POSIX sh script (remote-scripts.ts). BatchMode because a password or host-key prompt
 * on a holder would hang a rotation mid-delivery; the host key is checked as the inventory
 * or the operator's ssh config says, never silently accepted.
 */
import type { SecretDigest } from '../mesh/digest.js';
import type { SshTarget } from '../mesh/inventory.js';
import { ANSWER_PREFIX, COMMIT, DIGESTS, READ_TEXTS, STAGE, UNSTAGE, remoteCommand } from './remote-scripts.js';
import { runProcess, type ExecFn } from './run-process.js';
import { TransportError, type FileDigests, type Transport } from '../mesh/transport.js';

export interface SshTransportOptions {
  /** Replaces the process runner (tests record every child's argv and environment). */
  readonly exec?: ExecFn;
  /** Per operation, beyond the connect timeout. */
  readonly operationTimeoutMs?: number;
  /** The ssh program (default `ssh` on PATH). */
  readonly sshPath?: string;
}

/** The ssh argv up to and including the destination; the remote command is appended. */
export function sshArgs(target: SshTarget): string[] {
  const args = ['-o', 'BatchMode=yes', '-o', `ConnectTimeout=${target.connectTimeout}`, '-T'];
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
  const timeoutMs = target.connectTimeout * 1000 + (options.operationTimeoutMs ?? 30_000);
  // Resolving runs `true`: a holder that connects but does not answer within a few seconds
  // more is unresolved, and its ssh is killed rather than left to outlive the gate.
  const resolveTimeoutMs = target.connectTimeout * 1000 + 5_000;
  const run = async (what: string, command: string, input?: string, limitMs = timeoutMs): Promise<string> => {
    const result = await exec(options.sshPath ?? 'ssh', [...sshArgs(target), command], { timeoutMs: limitMs, ...(input === undefined ? {} : { input }) });
    if (result.failedToStart) throw new TransportError(machine, `could not start ssh: ${result.failedToStart}`);
    if (result.timedOut) throw new TransportError(machine, `${what}: no answer within ${Math.round(limitMs / 1000)} s`);
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
    resolve: async () => {
      await run('resolve', 'true', undefined, resolveTimeoutMs);
    },
    stage: async (files) => {
      if (files.length === 0) return [];
      const input = files.map((f) => `${f.secret.reveal()}\n`).join('');
      const out = lines(await run('staging', remoteCommand(STAGE, files.map((f) => f.path)), input), files.length, 'staging');
      return out.map(asDigest);
    },
    commit: async (paths) => {
      if (paths.length === 0) return;
      await run('commit', remoteCommand(COMMIT, paths));
    },
    unstage: async (paths) => {
      if (paths.length === 0) return;
      await run('unstage', remoteCommand(UNSTAGE, paths));
    },
    digests: async (paths) => {
      if (paths.length === 0) return [];
      const out = lines(await run('reading digests', remoteCommand(DIGESTS, paths)), paths.length, 'reading digests');
      return out.map((line): FileDigests => {
        const [live, next] = line.split(' ');
        return { live: asDigest(live), next: asDigest(next) };
      });
    },
    readTexts: async (paths) => {
      if (paths.length === 0) return [];
      const out = lines(await run('reading', remoteCommand(READ_TEXTS, paths)), paths.length, 'reading');
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
