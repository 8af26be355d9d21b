/**
 * The ssh agent session's rules (src/transport/ssh-serve.ts) against scripted sessions: what
 * goes to a fresh session, what to the one-shot run, what fails and in which words, and that a
 * call's deadline starts at its write. The same over a real sshd: ssh-serve-drops.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { onSent } from '../../src/mesh/deadline.js';
import { TransportError } from '../../src/mesh/transport.js';
import type { LiveProcess } from '../../src/transport/run-process.js';
import { serveSessions, sshServe, type ServeCall } from '../../src/transport/ssh-serve.js';

type Exit = Awaited<LiveProcess['exited']>;

/** Sessions started by the server, each scripted by the test: what was written, a way to answer and to end it. */
function scripted(options: { spare?: () => boolean } = {}) {
  const sessions: {
    /** What its command carried: the first reads, answered before its stdin is read. */
    carried: string;
    writes: string[];
    stopped: AbortSignal;
    ended: boolean;
    say: (line: string) => void;
    exit: (result: Partial<Exit>) => void;
  }[] = [];
  const serve = sshServe((onLine, signal, carried) => {
    if (options.spare && !options.spare()) return undefined;
    let exit: (result: Exit) => void = () => undefined;
    const exited = new Promise<Exit>((resolve) => (exit = resolve));
    const session = {
      carried,
      writes: [] as string[],
      stopped: signal,
      ended: false,
      say: onLine,
      exit: (result: Partial<Exit>) =>
        exit({ exitCode: undefined, stderr: '', failedToStart: undefined, ...result }),
    };
    sessions.push(session);
    return {
      write: (text) => session.writes.push(text),
      end: () => (session.ended = true),
      exited,
    };
  });
  return { serve, sessions };
}

const tick = () => new Promise((r) => setTimeout(r, 0));
/** The end of the turn: a session the turn's calls wait for has started. */
const turn = () => new Promise((r) => setImmediate(r));

function call(
  args: string[],
  signal = new AbortController().signal,
  oneShot: () => Promise<string> = () => Promise.reject(new Error('no one-shot expected')),
  input?: string,
): ServeCall {
  return {
    machine: 'web1',
    what: args[1] === 'stage' ? 'staging' : 'reading digests',
    args,
    signal,
    input,
    oneShot,
  };
}

describe('the ssh agent session', () => {
  it("answers calls in order on one session, and a call's deadline starts when its request is written", async () => {
    const { serve, sessions } = scripted();
    const signal = new AbortController().signal;
    let sentAt = -1;
    onSent(signal, () => (sentAt = sessions[0]?.writes.length ?? -1));
    const first = serve.call(call(['files', 'digests', '/m/a'], signal));
    const second = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
    // Nothing starts before the turn ends: its calls go out together.
    expect(sessions).toHaveLength(0);
    expect(sentAt).toBe(-1);
    await turn();
    // Armed with the session open, right as its request goes out (nothing written before it).
    expect(sentAt).toBe(0);
    expect(sessions).toHaveLength(1);
    // The read rides in the command; the stage, with its secret, only ever goes on stdin.
    expect(sessions[0]!.carried).toBe('files digests 1 0\n/m/a\n');
    expect(sessions[0]!.writes).toEqual(['files stage 1 1\n/m/a\nsecret\n']);
    sessions[0]!.say('@baton x');
    sessions[0]!.say('@baton end ok');
    sessions[0]!.say('@baton end err could not write /m/a.next.tmp.1: No space left on device');
    expect(await first).toBe('@baton x\n');
    await expect(second).rejects.toMatchObject({
      reason: 'staging failed on the machine: could not write /m/a.next.tmp.1: No space left on device',
    });
  });

  it("the reads asked in the session's opening turn ride in its command, in order, up to the first call that is not a read; later calls go on its stdin", async () => {
    const { serve, sessions } = scripted();
    const digests = serve.call(call(['files', 'digests', '/m/a', '/m/b']));
    const texts = serve.call(call(['files', 'texts', '/m/r']));
    const stage = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
    const after = serve.call(call(['files', 'digests', '/m/c']));
    await turn();
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.carried).toBe('files digests 2 0\n/m/a\n/m/b\nfiles texts 1 0\n/m/r\n');
    // A read behind the stage follows it on stdin: the agent answers what its command carried first.
    expect(sessions[0]!.writes).toEqual(['files stage 1 1\n/m/a\nsecret\n', 'files digests 1 0\n/m/c\n']);
    const later = serve.call(call(['files', 'digests', '/m/d']));
    expect(sessions[0]!.writes.at(-1)).toBe('files digests 1 0\n/m/d\n');
    for (const word of ['1', '2', '3', '4', '5']) {
      sessions[0]!.say(`@baton ${word}`);
      sessions[0]!.say('@baton end ok');
    }
    expect(await Promise.all([digests, texts, stage, after, later])).toEqual(
      ['1', '2', '3', '4', '5'].map((word) => `@baton ${word}\n`),
    );
    // One session for all of them.
    expect(sessions).toHaveLength(1);
  });

  it('a call cancelled before its turn ended is never sent; the turn starts its session with the others', async () => {
    const { serve, sessions } = scripted();
    const cancel = new AbortController();
    const dropped = serve.call(call(['files', 'digests', '/m/a'], cancel.signal));
    const kept = serve.call(call(['files', 'digests', '/m/b']));
    cancel.abort(new Error('cancelled'));
    await expect(dropped).rejects.toBeInstanceOf(TransportError);
    await turn();
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.carried).toBe('files digests 1 0\n/m/b\n');
    expect(sessions[0]!.writes).toEqual([]);
    sessions[0]!.say('@baton end ok');
    expect(await kept).toBe('');
  });

  it("reads past the command's bound go on stdin, in order behind the ones it carries", async () => {
    const { serve, sessions } = scripted();
    const many = (from: number) => Array.from({ length: 100 }, (_, i) => `/m/${'x'.repeat(90)}/${from + i}`);
    const first = serve.call(call(['files', 'digests', ...many(0)]));
    const second = serve.call(call(['files', 'digests', ...many(100)]));
    const third = serve.call(call(['files', 'digests', ...many(200)]));
    await turn();
    expect(Buffer.byteLength(sessions[0]!.carried)).toBeLessThanOrEqual(16 * 1024);
    expect(sessions[0]!.carried).toContain('/0\n');
    expect(sessions[0]!.carried.split('files digests').length - 1).toBe(1);
    expect(sessions[0]!.writes).toHaveLength(2);
    expect(sessions[0]!.writes[0]).toContain('/100\n');
    expect(sessions[0]!.writes[1]).toContain('/200\n');
    for (let i = 0; i < 3; i++) sessions[0]!.say('@baton end ok');
    expect(await Promise.all([first, second, third])).toEqual(['', '', '']);
  });

  it('a call whose bound runs out retires its session (stopped once nothing else is awaited); the next call gets a fresh one', async () => {
    const { serve, sessions } = scripted();
    const bound = new AbortController();
    const stalled = serve.call(call(['files', 'digests', '/m/a'], bound.signal));
    await turn();
    bound.abort(Object.assign(new Error('no answer within 15 s'), { name: 'NoAnswer' }));
    await expect(stalled).rejects.toBeInstanceOf(TransportError);
    expect(sessions[0]!.stopped.aborted).toBe(true);
    const next = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    expect(sessions).toHaveLength(2);
    sessions[1]!.say('@baton end ok');
    expect(await next).toBe('');
  });

  it('calls an agent that idled out had not read go to the next session', async () => {
    const { serve, sessions } = scripted();
    const asked = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
    await turn();
    expect(sessions[0]!.carried).toBe('');
    sessions[0]!.exit({ exitCode: 0 });
    await tick();
    await turn();
    expect(sessions).toHaveLength(2);
    expect(sessions[1]!.writes).toEqual(['files stage 1 1\n/m/a\nsecret\n']);
    sessions[1]!.say('@baton 00');
    sessions[1]!.say('@baton end ok');
    expect(await asked).toBe('@baton 00\n');
  });

  it('a connection sshd refused before anything ran hands every call, a write too, to the one-shot run', async () => {
    const { serve, sessions } = scripted();
    const asked = serve.call(
      call(['files', 'stage', '/m/a'], undefined, () => Promise.resolve('@baton 11\n'), 'secret\n'),
    );
    await turn();
    sessions[0]!.exit({
      exitCode: 255,
      stderr: 'kex_exchange_identification: read: Connection reset by peer\n',
    });
    expect(await asked).toBe('@baton 11\n');
    expect(sessions).toHaveLength(1);
  });

  it('a session whose ssh failed before it said anything fails a read at once in the one-shot words, not asked again', async () => {
    const { serve, sessions } = scripted();
    const read = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    sessions[0]!.exit({
      exitCode: 255,
      stderr: 'ssh: connect to host 10.0.0.9 port 22: Connection timed out\n',
    });
    const failed = await read.catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TransportError);
    expect((failed as TransportError).reason).toBe(
      'ssh failed: connect to host 10.0.0.9 port 22: Connection timed out',
    );
    expect((failed as TransportError).unreachable).toBe(true);
    // One connection attempt: an unreachable machine is not waited on twice.
    expect(sessions).toHaveLength(1);
  });

  it('a session dropped after it answered fails a write in the one-shot words (ssh failed, unreachable) and never sends it again', async () => {
    const { serve, sessions } = scripted();
    const read = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    sessions[0]!.say('@baton end ok');
    await read;
    const write = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
    // The running session takes it on its stdin at once.
    expect(sessions[0]!.writes).toEqual(['files stage 1 1\n/m/a\nsecret\n']);
    sessions[0]!.exit({ exitCode: 255, stderr: 'Connection to 127.0.0.1 closed by remote host.\n' });
    const failed = await write.catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TransportError);
    expect((failed as TransportError).reason).toBe(
      'ssh failed: Connection to 127.0.0.1 closed by remote host.',
    );
    expect((failed as TransportError).unreachable).toBe(true);
    expect(sessions).toHaveLength(1);
  });

  it('with no session to spare on the connection, a call is an ssh of its own', async () => {
    const { serve, sessions } = scripted({ spare: () => false });
    expect(
      await serve.call(call(['files', 'digests', '/m/a'], undefined, () => Promise.resolve('@baton -\n'))),
    ).toBe('@baton -\n');
    expect(sessions).toHaveLength(0);
  });

  it('the rename channel takes over an idle session only: its lines go to the channel from then on', async () => {
    const { serve, sessions } = scripted();
    const busy = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    expect(serve.adopt(() => undefined, new AbortController().signal)).toBeUndefined();
    sessions[0]!.say('@baton end ok');
    await busy;
    const lines: string[] = [];
    const life = new AbortController();
    const channel = serve.adopt((line) => lines.push(line), life.signal);
    expect(channel).toBeDefined();
    expect(sessions[0]!.writes.at(-1)).toBe('channel\n');
    sessions[0]!.say('@baton ready 1700000000000000000 relay v2');
    expect(lines).toEqual(['@baton ready 1700000000000000000 relay v2']);
    // The next file operation gets a session of its own.
    void serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    expect(sessions).toHaveLength(2);
    life.abort(new Error('done'));
    expect(sessions[0]!.stopped.aborted).toBe(true);
  });

  it('close ends the idle session (its stdin) and resolves once it has exited; the next call starts a fresh one', async () => {
    const { serve, sessions } = scripted();
    const sessionsOfCommand = serveSessions();
    sessionsOfCommand.add(serve);
    const read = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    sessions[0]!.say('@baton end ok');
    expect(await read).toBe('');
    let closed = false;
    const closing = sessionsOfCommand.close().then(() => (closed = true));
    await tick();
    expect(sessions[0]!.ended).toBe(true);
    // Not before the session has exited.
    expect(closed).toBe(false);
    sessions[0]!.exit({ exitCode: 0 });
    await closing;
    expect(closed).toBe(true);
    const again = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    expect(sessions).toHaveLength(2);
    sessions[1]!.say('@baton end ok');
    expect(await again).toBe('');
  });

  it('close waits at most its bound for a session that does not exit', async () => {
    const { serve, sessions } = scripted();
    const sessionsOfCommand = serveSessions();
    sessionsOfCommand.add(serve);
    const read = serve.call(call(['files', 'digests', '/m/a']));
    await turn();
    sessions[0]!.say('@baton end ok');
    await read;
    await sessionsOfCommand.close(50);
    expect(sessions[0]!.ended).toBe(true);
  });
});
