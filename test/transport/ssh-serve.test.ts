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
    writes: string[];
    stopped: AbortSignal;
    ended: boolean;
    say: (line: string) => void;
    exit: (result: Partial<Exit>) => void;
  }[] = [];
  const serve = sshServe((onLine, signal) => {
    if (options.spare && !options.spare()) return undefined;
    let exit: (result: Exit) => void = () => undefined;
    const exited = new Promise<Exit>((resolve) => (exit = resolve));
    const session = {
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
    // Armed with the session open, right as its request goes out (nothing written before it).
    expect(sentAt).toBe(0);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.writes).toEqual(['files digests 1 0\n/m/a\n', 'files stage 1 1\n/m/a\nsecret\n']);
    sessions[0]!.say('@baton x');
    sessions[0]!.say('@baton end ok');
    sessions[0]!.say('@baton end err could not write /m/a.next.tmp.1: No space left on device');
    expect(await first).toBe('@baton x\n');
    await expect(second).rejects.toMatchObject({
      reason: 'staging failed on the machine: could not write /m/a.next.tmp.1: No space left on device',
    });
  });

  it('a call whose bound runs out retires its session (stopped once nothing else is awaited); the next call gets a fresh one', async () => {
    const { serve, sessions } = scripted();
    const bound = new AbortController();
    const stalled = serve.call(call(['files', 'digests', '/m/a'], bound.signal));
    bound.abort(Object.assign(new Error('no answer within 15 s'), { name: 'NoAnswer' }));
    await expect(stalled).rejects.toBeInstanceOf(TransportError);
    expect(sessions[0]!.stopped.aborted).toBe(true);
    const next = serve.call(call(['files', 'digests', '/m/a']));
    expect(sessions).toHaveLength(2);
    sessions[1]!.say('@baton end ok');
    expect(await next).toBe('');
  });

  it('calls an agent that idled out had not read go to the next session', async () => {
    const { serve, sessions } = scripted();
    const asked = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
    sessions[0]!.exit({ exitCode: 0 });
    await tick();
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
    sessions[0]!.say('@baton end ok');
    await read;
    const write = serve.call(call(['files', 'stage', '/m/a'], undefined, undefined, 'secret\n'));
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
    expect(sessions).toHaveLength(2);
    life.abort(new Error('done'));
    expect(sessions[0]!.stopped.aborted).toBe(true);
  });

  it('close ends the idle session (its stdin) and resolves once it has exited; the next call starts a fresh one', async () => {
    const { serve, sessions } = scripted();
    const sessionsOfCommand = serveSessions();
    sessionsOfCommand.add(serve);
    const read = serve.call(call(['files', 'digests', '/m/a']));
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
    expect(sessions).toHaveLength(2);
    sessions[1]!.say('@baton end ok');
    expect(await again).toBe('');
  });

  it('close waits at most its bound for a session that does not exit', async () => {
    const { serve, sessions } = scripted();
    const sessionsOfCommand = serveSessions();
    sessionsOfCommand.add(serve);
    const read = serve.call(call(['files', 'digests', '/m/a']));
    sessions[0]!.say('@baton end ok');
    await read;
    await sessionsOfCommand.close(50);
    expect(sessions[0]!.ended).toBe(true);
  });
});
