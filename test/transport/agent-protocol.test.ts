/**
 * The agent protocol's one codec (src/transport/agent-protocol.ts, docs/agent-protocol.md): the
 * requests as the agent reads them, every answer decoded, and what a malformed, truncated,
 * interleaved or hostile answer becomes — never a rename reported that the machine did not say,
 * never a machine's control character on the screen. The last cases drive openRenameChannel
 * with a scripted session; the real agent's hello is checked against the codec's version.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENT_FILE } from '../../src/transport/agent-program.js';
import {
  decodeTextwrite,
  decodeWholeText,
  textwriteInput,
  AGENT_PROTOCOL,
  answerLines,
  channelRequest,
  decodeChannelAnswer,
  decodeDigests,
  decodeWatchAnswer,
  nsToMs,
  serveArgs,
  serveRequest,
} from '../../src/transport/agent-protocol.js';
import type { LiveProcess } from '../../src/transport/run-process.js';
import { openRenameChannel } from '../../src/transport/agent-channel.js';

const NS = '1700000000123456789';
const AT = nsToMs(NS)!;

describe('requests', () => {
  it('are whole lines: a commit and an arm name their count, their reloads, then one path a line', () => {
    expect(channelRequest.clock()).toBe('t\n');
    expect(channelRequest.commit(['/a', '/b'])).toBe('c 2\n/a\n/b\n');
    expect(channelRequest.commit(['/a'], ['r1', 'r2'])).toBe('c 1 r1,r2\n/a\n');
    expect(channelRequest.arm('s3', ['/a'], ['r4'])).toBe('a s3 1 r4\n/a\n');
    expect(channelRequest.open('s3', 'db.internal', 5432)).toBe('o s3 db.internal 5432\n');
    expect(channelRequest.write('s3', Buffer.from([0, 255]))).toBe('w s3 00ff\n');
    expect(channelRequest.close('s3')).toBe('x s3\n');
  });

  it('a reload carries its command as hex (any byte, no line break) and its environment as lines', () => {
    expect(channelRequest.reload('r1', 5, 'kill -HUP "$(cat pid)"\n', { A: '1', B_C: 'x y' })).toBe(
      `r r1 5 ${Buffer.from('kill -HUP "$(cat pid)"\n').toString('hex')} 2\nA=1\nB_C=x y\n`,
    );
  });
});

describe('serve requests', () => {
  it('name the op, its paths and input lines; a machine root (the local agent for every root) goes in hex', () => {
    // What a serve's command carries: its requests in hex, after its idle seconds; none, nothing.
    expect(serveArgs(90)).toEqual(['serve', '90']);
    expect(serveArgs(90, 'hello\nfiles texts 1 0\n/é x\n')).toEqual([
      'serve',
      '90',
      Buffer.from('hello\nfiles texts 1 0\n/é x\n', 'utf8').toString('hex'),
    ]);
    expect(serveArgs(90, 'hello\n')[2]).toMatch(/^[0-9a-f]+$/);
    expect(serveRequest(['hello'])).toBe('hello\n');
    expect(serveRequest(['files', 'digests', '/a', '/b'])).toBe('files digests 2 0\n/a\n/b\n');
    expect(serveRequest(['files', 'stage', '/a'], 'secret')).toBe('files stage 1 1\n/a\nsecret\n');
    const root = "/srv/it's here\n";
    expect(serveRequest(['files', 'digests', '/a'], '', root)).toBe(
      `files digests 1 0 ${Buffer.from(root).toString('hex')}\n/a\n`,
    );
  });

  it('the agent answers each for its own root, and refuses a root that is not a directory by name', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-roots-'));
    try {
      for (const m of ['db1', 'web1']) {
        mkdirSync(path.join(dir, m));
        writeFileSync(path.join(dir, m, 'f'), `text of ${m}`);
      }
      const requests = [
        serveRequest(['files', 'texts', '/f'], '', path.join(dir, 'db1')),
        serveRequest(['files', 'texts', '/f'], '', path.join(dir, 'web1')),
        serveRequest(['files', 'texts', '/f'], '', path.join(dir, 'gone')),
        serveRequest(['files', 'texts', '/f']),
      ].join('');
      // The agent reads its requests on fd 3: here the pipe its stdin is.
      const out = execFileSync('sh', ['-c', 'exec perl "$0" serve 1 3<&0', fileURLToPath(AGENT_FILE)], {
        encoding: 'utf8',
        input: requests,
      });
      expect(out.split('\n')).toEqual([
        '@baton +text of db1',
        '@baton end ok',
        '@baton +text of web1',
        '@baton end ok',
        `@baton end err the machine's root ${path.join(dir, 'gone')} is not a directory`,
        '@baton -',
        '@baton end ok',
        '',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('channel answers', () => {
  it('decodes the hello, with the protocol it names, and a shell without the relay', () => {
    expect(decodeChannelAnswer(`@baton ready ${NS} relay v${AGENT_PROTOCOL}`)).toEqual({
      kind: 'ready',
      relay: true,
      protocol: AGENT_PROTOCOL,
    });
    expect(decodeChannelAnswer(`@baton ready ${NS} relay v7`)).toMatchObject({ protocol: 7 });
    expect(decodeChannelAnswer(`@baton ready ${NS} relay`)).toMatchObject({
      relay: true,
      protocol: undefined,
    });
    expect(decodeChannelAnswer(`@baton ready ${NS}`)).toEqual({
      kind: 'ready',
      relay: false,
      protocol: undefined,
    });
  });

  it('decodes untagged answers; a clock or a rename without its nanoseconds is malformed', () => {
    expect(decodeChannelAnswer(`@baton t ${NS}`)).toEqual({ kind: 'clock', atMs: AT });
    expect(decodeChannelAnswer(`@baton ok ${NS}`)).toEqual({ kind: 'renamed', atMs: AT });
    expect(decodeChannelAnswer('@baton err no staged file /a.next')).toEqual({
      kind: 'failed',
      why: 'no staged file /a.next',
    });
    for (const text of ['ok', 'ok 12', `ok ${NS}x`, 't soon', 'ready', 'hello', ''])
      expect(decodeChannelAnswer(`@baton ${text}`)).toEqual({ kind: 'malformed', text });
  });

  it('is not an answer without the prefix (a banner, a shell rc saying "ok")', () => {
    for (const line of [`ok ${NS}`, `@batonok ${NS}`, ` @baton ok ${NS}`, 'Welcome to web1'])
      expect(decodeChannelAnswer(line)).toBeUndefined();
  });

  it('decodes tagged answers by id; bytes only as whole hex, else the connection errs', () => {
    expect(decodeChannelAnswer('@baton s s1 open')).toEqual({
      kind: 'socket',
      id: 's1',
      event: { type: 'open' },
    });
    expect(decodeChannelAnswer('@baton s s1 d 52000000')).toEqual({
      kind: 'socket',
      id: 's1',
      event: { type: 'data', bytes: Buffer.from([0x52, 0, 0, 0]) },
    });
    expect(decodeChannelAnswer('@baton s s1 end')).toMatchObject({ event: { type: 'end' } });
    expect(decodeChannelAnswer('@baton s s1 err connect: refused')).toMatchObject({
      event: { type: 'error', why: 'connect: refused' },
    });
    for (const bad of ['d 5', 'd zz', 'd ', 'dd 00'])
      expect(decodeChannelAnswer(`@baton s s1 ${bad}`)).toMatchObject({ event: { type: 'error' } });
    expect(decodeChannelAnswer(`@baton a s1 ok ${NS}`)).toEqual({
      kind: 'arm',
      id: 's1',
      outcome: { type: 'renamed', atMs: AT },
    });
    expect(decodeChannelAnswer('@baton a s1 refused')).toMatchObject({ outcome: { type: 'refused' } });
    expect(decodeChannelAnswer('@baton a s1 err could not rename')).toMatchObject({
      outcome: { type: 'failed', why: 'could not rename' },
    });
    expect(decodeChannelAnswer('@baton a s1 ok later')).toMatchObject({
      outcome: { type: 'malformed', text: 'ok later' },
    });
    expect(decodeChannelAnswer('@baton r r2 rc 0 0')).toMatchObject({
      kind: 'reload',
      id: 'r2',
      event: { type: 'line', answer: '@baton rc 0 0' },
    });
    expect(decodeChannelAnswer('@baton r r2 .')).toMatchObject({ event: { type: 'done' } });
    expect(decodeChannelAnswer('@baton r r2 skip')).toMatchObject({ event: { type: 'skip' } });
    expect(decodeChannelAnswer('@baton r r2 fail could not fork')).toMatchObject({
      event: { type: 'fail', why: 'could not fork' },
    });
  });
});

describe('one-shot answers', () => {
  it('a truncated answer is counted, not padded; an empty answer counts as missing', () => {
    expect(answerLines('@baton a\n@baton b\n', 2)).toEqual(['a', 'b']);
    expect(answerLines('motd\n@baton a\nnoise\n@baton b', 2)).toEqual(['a', 'b']);
    expect(answerLines('@baton a\n', 2)).toEqual({ got: 1 });
    expect(answerLines('@baton a\n@baton b\n@baton c\n', 2)).toEqual({ got: 3 });
    expect(answerLines('@baton a\n@baton \n', 2)).toEqual({ got: 2 });
  });

  it('digests: three lines a path; anything not a digest is no digest', () => {
    const hex = 'ab'.repeat(32);
    const [first, second] = decodeDigests(
      [`${hex} - 1700000000 - web1_app`, '+{"id":"r1"}', '+baton on ctl1', `zz ${hex} x ${hex} -`, '-', '-'],
      2,
    );
    expect(first).toEqual({
      live: `sha256:${hex}`,
      next: undefined,
      prev: undefined,
      liveModifiedMs: 1_700_000_000_000,
      liveLogin: 'web1_app',
      record: '{"id":"r1"}',
      lockedBy: 'baton on ctl1',
    });
    expect(second).toEqual({
      live: undefined,
      next: `sha256:${hex}`,
      prev: `sha256:${hex}`,
      liveModifiedMs: undefined,
      liveLogin: undefined,
      record: undefined,
      lockedBy: undefined,
    });
  });

  it('the watcher: a path index outside the paths watched is dropped', () => {
    expect(decodeWatchAnswer('@baton 1 +{"ok":1}', 2)).toEqual({ kind: 'text', index: 1, text: '{"ok":1}' });
    expect(decodeWatchAnswer('@baton 0 -', 2)).toEqual({ kind: 'text', index: 0, text: undefined });
    expect(decodeWatchAnswer('@baton 2 +x', 2)).toBeUndefined();
    expect(decodeWatchAnswer('@baton .', 2)).toEqual({ kind: 'reported' });
    expect(decodeWatchAnswer('@baton ~', 2)).toEqual({ kind: 'beat' });
    expect(decodeWatchAnswer('@baton 0 x', 2)).toBeUndefined();
  });
});

/** A session the test answers by hand (clock readings answered as they are asked): what baton wrote, and a way to say lines back. */
function scriptedSession() {
  const written: string[] = [];
  let say: (line: string) => void = () => undefined;
  let exit: (code: number) => void = () => undefined;
  let ended = false;
  const start = (onLine: (line: string) => void): LiveProcess => {
    say = onLine;
    return {
      write: (text) => {
        written.push(text);
        if (text === 't\n') queueMicrotask(() => say(`@baton t ${NS}`));
      },
      end: () => {
        ended = true;
      },
      exited: new Promise((resolve) => {
        exit = (code) => resolve({ exitCode: code, stderr: '', failedToStart: undefined });
      }),
    };
  };
  return {
    start,
    written,
    say: (line: string) => say(line),
    exit: (code: number) => exit(code),
    ended: () => ended,
  };
}

/** The channel once its hello and all three clock readings (one before it opens, two after) are answered. */
async function opened(session: ReturnType<typeof scriptedSession>) {
  const channel = openRenameChannel('web1', session.start, new AbortController().signal);
  session.say(`@baton ready ${NS} relay v${AGENT_PROTOCOL}`);
  const open = await channel;
  while (session.written.filter((w) => w === 't\n').length < 3) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  return open;
}

/** A promise's rejection as a value, taken at once (a rejection nobody awaits yet is not unhandled). */
const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );

describe('the rename channel over the codec', () => {
  it('refuses an agent of another protocol and ends its session, asking nothing of it', async () => {
    const session = scriptedSession();
    const channel = openRenameChannel('web1', session.start, new AbortController().signal);
    session.say(`@baton ready ${NS} relay v${AGENT_PROTOCOL + 1}`);
    await expect(channel).rejects.toThrow(
      `web1: the rename channel answered in protocol v${AGENT_PROTOCOL + 1}, not baton's v${AGENT_PROTOCOL}`,
    );
    expect(session.written).toEqual([]);
    expect(session.ended()).toBe(true);
  });

  it('interleaved: tagged answers between untagged ones leave the first-in-first-out order alone', async () => {
    const session = scriptedSession();
    const channel = await opened(session);
    const signal = new AbortController().signal;
    const first = channel.commit(['/srv/a'], signal);
    const second = failureOf(channel.commit(['/srv/b'], signal));
    session.say('@baton r r9 .');
    session.say('@baton s s9 d 00');
    session.say('@baton ok 1700000000100000000');
    session.say('@baton a s9 refused');
    session.say('@baton err no staged file /srv/b.next');
    expect(await first).toBe(1_700_000_000_100);
    expect((await second)?.message).toBe('web1: commit failed on the machine: no staged file /srv/b.next');
    expect(session.written.slice(-2)).toEqual(['c 1\n/srv/a\n', 'c 1\n/srv/b\n']);
  });

  it('a malformed answer to a rename is an error that quotes it, never a rename', async () => {
    const session = scriptedSession();
    const channel = await opened(session);
    const commit = channel.commit(['/srv/a'], new AbortController().signal);
    session.say('@baton ok yesterday');
    await expect(commit).rejects.toThrow('web1: the rename channel answered "ok yesterday"');
  });

  it("hostile: ESC and CR in the machine's reason reach the message only as shown() makes them", async () => {
    const session = scriptedSession();
    const channel = await opened(session);
    const commit = failureOf(channel.commit(['/srv/a'], new AbortController().signal));
    session.say('@baton err \x1b[2J\x1b[Hall good\rOK');
    const error = await commit;
    expect(error?.message).toMatch(/^web1: commit failed on the machine: /);
    expect(error?.message).not.toMatch(/[\x1b\r]/);
  });

  it('truncated: a session that ends mid-answer fails every waiting request, in words', async () => {
    const session = scriptedSession();
    const channel = await opened(session);
    const commit = channel.commit(['/srv/a'], new AbortController().signal);
    session.exit(0);
    await expect(commit).rejects.toThrow('web1: the rename channel closed');
  });
});

describe('the agent itself', () => {
  it("says the codec's protocol in its hello", async () => {
    const child = spawn('perl', [fileURLToPath(AGENT_FILE), 'channel', 'true'], {
      stdio: ['ignore', 'pipe', 'inherit', 'pipe'],
    });
    const first = await new Promise<string>((resolve) =>
      child.stdout!.once('data', (data: Buffer) => resolve(data.toString('utf8').split('\n')[0]!)),
    );
    child.kill('SIGKILL');
    expect(decodeChannelAnswer(first)).toEqual({ kind: 'ready', relay: true, protocol: AGENT_PROTOCOL });
  });
});

describe('textread and textwrite (a whole file, a compare-and-swap)', () => {
  it('decodes a whole file from hex, absent as absent, and refuses hex that is not whole bytes', () => {
    expect(decodeWholeText(`+${Buffer.from('"a" "b"\n\n').toString('hex')}`)).toEqual({
      bytes: Buffer.from('"a" "b"\n\n'),
    });
    expect(decodeWholeText('+')).toEqual({ bytes: Buffer.alloc(0) });
    expect(decodeWholeText('-')).toEqual({ absent: true });
    expect(decodeWholeText('+abc')).toEqual({ malformed: true });
    expect(decodeWholeText('+zz')).toEqual({ malformed: true });
    expect(decodeWholeText('written')).toEqual({ malformed: true });
  });
  it('sends the digest and the text as two lines, and reads only `written` or `changed <digest>`', () => {
    expect(textwriteInput('ab'.repeat(32), 'x\n')).toBe(`${'ab'.repeat(32)}\n780a\n`);
    expect(decodeTextwrite('written')).toBe('written');
    expect(decodeTextwrite(`changed ${'0'.repeat(64)}`)).toBe('changed');
    expect(decodeTextwrite('changed')).toBeUndefined();
    expect(decodeTextwrite('written now')).toBeUndefined();
  });
});
