/**
 * Every file operation of a Transport, ONCE, as requests to the agent (agent/baton-agent.pl,
 * docs/agent-protocol.md) read back through the codec (agent-protocol.ts). A transport only
 * says how the agent is reached (an AgentHost): ssh-transport.ts over a holder's sshd,
 * local-transport.ts as a perl on this host under a directory that plays the machine's root.
 */
import {
  AGENT_PROTOCOL,
  answerLines,
  answerOf,
  decodeDigests,
  decodeHello,
  decodeText,
  decodeTextwrite,
  decodeWholeText,
  decodeWatchAnswer,
  digestOf,
  NO_PERL,
  textwriteInput,
  unsendablePath,
} from './agent-protocol.js';
import { createHash } from 'node:crypto';
import { failedSession } from './agent-channel.js';
import { checkCommandRequest, parseRunAnswer, runArgs } from './machine-command.js';
import type { LiveOptions, LiveProcess } from './run-process.js';
import {
  abortedError,
  TransportError,
  type FileDigests,
  type MachineLock,
  type MachineRecord,
  type StagedFile,
  type TextChange,
  type Transport,
} from '../mesh/transport.js';

/** How the agent is reached on one machine. */
export interface AgentHost {
  readonly machine: string;
  /** What carries the agent there, for the words of a session that fails (agent-channel.ts failedSession). */
  readonly via: 'ssh' | 'perl';
  /**
   * One run of the agent with `args` (its mode first), `input` on its fd 3: its stdout, or a
   * TransportError with the agent's reason (the last stderr line) when it exits other than 0.
   */
  call(what: string, args: readonly string[], signal: AbortSignal, input?: string): Promise<string>;
  /** A long-lived agent (the lock, the receipt watcher, the rename channel): lines out as they come, requests in. */
  session(args: readonly string[], options: LiveOptions): LiveProcess;
}

/** The operations every transport shares: resolve's hello and every file operation, the lock, the watch and a command. */
export type AgentOperations = Pick<
  Transport,
  | 'resolve'
  | 'stage'
  | 'commit'
  | 'unstage'
  | 'keepPrevious'
  | 'restorePrevious'
  | 'discardPrevious'
  | 'retire'
  | 'digests'
  | 'writeRecords'
  | 'writeRecordsThen'
  | 'lock'
  | 'readTexts'
  | 'readWholeText'
  | 'swapText'
  | 'watchTexts'
  | 'runCommand'
>;

export function agentOperations(host: AgentHost): AgentOperations {
  const { machine } = host;
  const lines = (text: string, count: number, what: string): string[] => {
    const out = answerLines(text, count);
    if (!Array.isArray(out))
      throw new TransportError(machine, `${what}: the machine answered ${out.got} of ${count} lines`);
    return out;
  };
  /**
   * A one-shot `files <op>` over `paths`, nothing asked for none. A path with a line break is
   * refused before anything is sent (docs/agent-protocol.md, "Lines"): `serve` reads one path a
   * line, and such a path would be split, its secret staged as the path's next line.
   */
  const files = async (
    what: string,
    op: string,
    paths: readonly string[],
    signal: AbortSignal,
    input?: string,
  ) => {
    const bad = unsendablePath(paths);
    if (bad !== undefined)
      throw new TransportError(
        machine,
        `${what}: a path with a line break cannot be sent: ${JSON.stringify(bad)}`,
      );
    return host.call(what, ['files', op, ...paths], signal, input);
  };
  // One secret a line, on the agent's fd 3 only (never in argv): what `stage` reads.
  const secretInput = (staged: readonly StagedFile[]) => staged.map((f) => `${f.secret.reveal()}\n`).join('');
  const recordPaths = (records: readonly MachineRecord[]) => records.map((r) => r.path);
  // One record a line: a record with a line break would be read as two.
  const recordInput = (records: readonly MachineRecord[]) => {
    const bad = records.find((r) => r.text.includes('\n'));
    if (bad) throw new TransportError(machine, `a record with a line break cannot be written: ${bad.path}`);
    return records.map((r) => `${r.text}\n`).join('');
  };
  return {
    // The agent's hello: a holder without perl 5, or answering another protocol, is unresolved
    // at plan time, before anything is generated (docs/agent-protocol.md, "Mode hello").
    resolve: async (signal) => {
      let said: string;
      try {
        said = await host.call('resolve', ['hello'], signal);
      } catch (error) {
        if (error instanceof TransportError && error.reason.endsWith(NO_PERL))
          throw new TransportError(machine, NO_PERL);
        throw error;
      }
      const hello = decodeHello(said);
      if (hello === undefined)
        throw new TransportError(machine, 'resolve: the machine did not answer the hello');
      if (hello.kind === 'no-perl' || !/^5\./.test(hello.perl)) throw new TransportError(machine, NO_PERL);
      if (hello.protocol !== AGENT_PROTOCOL)
        throw new TransportError(
          machine,
          `the agent answered in protocol v${hello.protocol}, not baton's v${AGENT_PROTOCOL}: it is not the agent this baton sent`,
        );
    },
    stage: async (staged, signal) => {
      if (staged.length === 0) return [];
      const input = secretInput(staged);
      const paths = staged.map((f) => f.path);
      return lines(await files('staging', 'stage', paths, signal, input), staged.length, 'staging').map(
        digestOf,
      );
    },
    commit: async (paths, signal) => {
      if (paths.length > 0) await files('commit', 'commit', paths, signal);
    },
    unstage: async (paths, signal) => {
      if (paths.length > 0) await files('unstage', 'unstage', paths, signal);
    },
    keepPrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      const what = 'keeping the previous file';
      return lines(await files(what, 'keep', paths, signal), paths.length, what).map(digestOf);
    },
    restorePrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      const what = 'restoring the previous file';
      return lines(await files(what, 'restore', paths, signal), paths.length, what).map(
        (l) => l === 'restored',
      );
    },
    discardPrevious: async (paths, signal) => {
      if (paths.length > 0) await files('removing the previous file', 'discard', paths, signal);
    },
    retire: async (paths, signal) => {
      if (paths.length > 0) await files('removing the switched file', 'retire', paths, signal);
    },
    digests: async (paths, signal) => {
      if (paths.length === 0) return [];
      // Three lines a path: its digests, its rotation record, its directory's lock.
      const what = 'reading digests';
      const out = lines(await files(what, 'digests', paths, signal), paths.length * 3, what);
      return decodeDigests(out, paths.length).map((d): FileDigests => ({
        live: d.live,
        next: d.next,
        ...(d.prev ? { prev: d.prev } : {}),
        ...(d.liveModifiedMs === undefined ? {} : { liveModifiedMs: d.liveModifiedMs }),
        ...(d.liveLogin === undefined ? {} : { liveLogin: d.liveLogin }),
        ...(d.record === undefined ? {} : { record: d.record }),
        ...(d.lockedBy === undefined ? {} : { lockedBy: d.lockedBy }),
      }));
    },
    writeRecords: async (records, signal) => {
      if (records.length === 0) return;
      await files(
        'writing the rotation record',
        'records',
        recordPaths(records),
        signal,
        recordInput(records),
      );
    },
    // `records:<r>+<op>`: the records, then the step they announce, in one request.
    writeRecordsThen: async (records, step, signal) => {
      const paths = 'stage' in step ? step.stage.map((f) => f.path) : step.keep;
      const op = 'stage' in step ? 'stage' : step.commit ? 'keep+commit' : 'keep';
      const what = 'stage' in step ? 'staging' : 'keeping the previous file';
      if (paths.length === 0) throw new TransportError(machine, `${what}: no path given`);
      const input = 'stage' in step ? secretInput(step.stage) : '';
      const out = await files(
        what,
        `records:${records.length}+${op}`,
        [...recordPaths(records), ...paths],
        signal,
        recordInput(records) + input,
      );
      return lines(out, paths.length, what).map(digestOf);
    },
    // A session of its own for the rotation's whole life: the agent holds the flock, and ending
    // the session (or losing it) lets the lock go, its words removed first.
    lock: (dir, holder, signal) => {
      const what = 'taking the provider lock';
      if (signal.aborted) return Promise.reject(abortedError(machine, what, signal));
      return new Promise<MachineLock>((resolve, reject) => {
        let answered = false;
        const child = host.session(['lock', dir, holder.replace(/\n/g, ' ')], {
          onLine: (line) => {
            const answer = answerOf(line);
            if (answered || answer === undefined) return;
            if (answer === 'locked') {
              answered = true;
              let released: Promise<void> | undefined;
              resolve({
                taken: true,
                release: () =>
                  (released ??= (async () => {
                    child.end();
                    await child.exited;
                  })()),
              });
            } else if (answer === 'busy' || answer.startsWith('busy ')) {
              answered = true;
              const words = answer.slice(5).trim();
              resolve({ taken: false, holder: words === '' ? undefined : words });
            }
          },
          signal,
          ownGroup: true,
        });
        void child.exited.then((result) => {
          if (answered) return;
          answered = true;
          if (signal.aborted) return reject(abortedError(machine, what, signal));
          try {
            failedSession(machine, what, result, host.via);
            reject(new TransportError(machine, `${what}: the machine did not answer`));
          } catch (error) {
            reject(error);
          }
        });
      });
    },
    readTexts: async (paths, signal) => {
      if (paths.length === 0) return [];
      return lines(await files('reading', 'texts', paths, signal), paths.length, 'reading').map(decodeText);
    },
    // pooler-file: a whole file as hex, so its other lines come back byte for byte.
    readWholeText: async (file, signal) => {
      const what = 'reading the whole file';
      const [answer] = lines(await files(what, 'textread', [file], signal), 1, what);
      const read = decodeWholeText(answer!);
      if ('absent' in read) return undefined;
      if ('malformed' in read) throw new TransportError(machine, `${what}: the machine's answer is not hex`);
      const text = read.bytes.toString('utf8');
      // A file that is not UTF-8 would not be written back as it was read: refused, never mangled.
      if (!Buffer.from(text, 'utf8').equals(read.bytes))
        throw new TransportError(machine, `${what}: ${file} is not UTF-8 text`);
      return { text, sha256: createHash('sha256').update(read.bytes).digest('hex') };
    },
    swapText: async (file, expected, text, signal) => {
      const what = 'replacing the file';
      const input = textwriteInput(expected, text);
      const [answer] = lines(await files(what, 'textwrite', [file], signal, input), 1, what);
      const outcome = decodeTextwrite(answer!);
      if (outcome === undefined)
        throw new TransportError(
          machine,
          `${what}: the machine answered "${answer!}", not written or changed`,
        );
      return outcome === 'written';
    },
    // One session for the whole wait: the machine reads the files itself and reports changes,
    // so a receipt costs a poll interval and a one-way trip instead of a call per poll.
    watchTexts: async (paths, watch, onChange, signal) => {
      if (signal.aborted) throw abortedError(machine, 'watching receipts', signal);
      if (paths.length === 0) return;
      const interval = (Math.max(watch.intervalMs, 1) / 1000).toFixed(3);
      const lifetime = String(Math.ceil(watch.forMs / 1000) + 2);
      const reported = new Map<number, string | undefined>();
      let snapshot = new Map<number, string | undefined>();
      const onLine = (line: string) => {
        const answer = decodeWatchAnswer(line, paths.length);
        if (answer === undefined || answer.kind === 'beat') return;
        if (answer.kind === 'reported') {
          const changes: TextChange[] = [];
          for (const [index, text] of snapshot) {
            if (!reported.has(index) || reported.get(index) !== text) changes.push({ index, text });
            reported.set(index, text);
          }
          snapshot = new Map();
          if (changes.length > 0) onChange(changes);
          return;
        }
        snapshot.set(answer.index, answer.text);
      };
      const child = host.session(['watch', interval, lifetime, ...paths], { onLine, signal });
      const result = await child.exited;
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while the session ran
      if (signal.aborted) return;
      failedSession(machine, 'watching receipts', result, host.via);
    },
    // app-truth: a consumer's reload, bounded on the machine by the agent's `run`.
    runCommand: async (request, signal) => {
      checkCommandRequest(machine, request);
      const started = performance.now();
      const out = await host.call('running the command', runArgs(request), signal);
      return parseRunAnswer(machine, out, Math.round(performance.now() - started));
    },
  };
}
