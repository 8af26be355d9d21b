/**
 * The rename channel's relay (the agent's `channel` mode, ssh-transport.ts openRenameChannel),
 * run here as ssh runs it on a machine (`sh -c <agentCommand(['channel'])>`, perl on this host),
 * against a local TCP server that frames its answers as PostgreSQL does. The armed commit renames
 * only on ReadyForQuery after AuthenticationOk; an ErrorResponse, a close, or a ReadyForQuery with
 * no AuthenticationOk before it renames nothing. A reload named by a commit starts after its renames.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCommand, agentInput } from '../../src/transport/remote-scripts.js';
import { startProcess } from '../../src/transport/run-process.js';
import { openRenameChannel } from '../../src/transport/agent-channel.js';
import type { RenameChannel } from '../../src/mesh/transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

/** A backend message: type, int32 length, body. */
const msg = (type: string, body: Buffer = Buffer.alloc(0)) => {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
};
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
};

/** Answers each word the client sends: `pass` AuthenticationOk + ReadyForQuery (split across writes), `fail` an ErrorResponse, `early` ReadyForQuery alone, `close` a close. */
function fakeServer(): Promise<net.Server> {
  const server = net.createServer((socket) => {
    socket.on('data', (data) => {
      const word = data.toString('latin1');
      if (word.includes('pass')) {
        const whole = Buffer.concat([
          msg('R', int32(0)),
          msg('S', Buffer.from('a\0b\0')),
          msg('Z', Buffer.from('I')),
        ]);
        socket.write(whole.subarray(0, 7));
        setTimeout(() => socket.write(whole.subarray(7)), 30);
      } else if (word.includes('fail'))
        socket.write(msg('E', Buffer.from('SFATAL\0C28000\0Mno pg_hba.conf entry\0\0')));
      else if (word.includes('early')) socket.write(msg('Z', Buffer.from('I')));
      else if (word.includes('close')) socket.end();
      else socket.write(data);
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('the rename channel relays a TCP connection from the machine and commits on its login', () => {
  let server: net.Server;
  let port: number;
  let tmp: { dir: string; cleanup: () => void };
  let channel: RenameChannel;
  const life = new AbortController();
  beforeAll(async () => {
    server = await fakeServer();
    port = (server.address() as net.AddressInfo).port;
    tmp = makeTempDir('baton-relay-');
    channel = await openRenameChannel(
      'web1',
      (onLine) => {
        const child = startProcess('sh', ['-c', agentCommand(['channel'])], {
          onLine,
          signal: life.signal,
        });
        // As ssh hands it over: the program first on the session's stdin.
        child.write(agentInput());
        return child;
      },
      life.signal,
    );
  });
  afterAll(() => {
    channel.close();
    life.abort();
    server.close();
    tmp.cleanup();
  });
  const staged = (name: string) => {
    const live = path.join(tmp.dir, name, 'web1_app');
    mkdirSync(path.dirname(live), { recursive: true });
    writeFileSync(live, 'old');
    writeFileSync(`${live}.next`, 'new');
    return live;
  };
  const read = (socket: Duplex, until: (all: Buffer) => boolean) =>
    new Promise<Buffer>((resolve) => {
      let all = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        all = Buffer.concat([all, d]);
        if (until(all)) resolve(all);
      });
    });

  it('says it can relay; bytes go both ways unchanged', async () => {
    expect(channel.relay).toBeDefined();
    const socket = await channel.relay!.openSocket('127.0.0.1', port, life.signal);
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13, 0x40, 0x62]);
    const back = read(socket, (all) => all.length >= bytes.length);
    socket.write(bytes);
    expect(await back).toEqual(bytes);
    socket.destroy();
  });

  it('an armed commit renames on ReadyForQuery after AuthenticationOk (even split across reads), and starts its reload after the rename', async () => {
    const live = staged('pass');
    const marker = path.join(tmp.dir, 'pass', 'reloaded');
    const socket = await channel.relay!.openSocket('127.0.0.1', port, life.signal);
    const armed = socket.arm(
      [live],
      [
        {
          command: `cat "$BATON_CONSUMER_FILE" > ${marker}; echo bad things >&2; exit 7`,
          env: { BATON_CONSUMER_FILE: live },
          timeoutMs: 10_000,
        },
      ],
    );
    const seen = read(socket, (all) => all.includes(Buffer.from('Z')));
    socket.write('pass');
    await seen;
    const result = await armed;
    expect(result.moved).toBe(true);
    expect(readFileSync(live, 'utf8')).toBe('new');
    expect(existsSync(`${live}.next`)).toBe(false);
    if (!result.moved) return;
    expect(Math.abs(result.at - Date.now())).toBeLessThan(5_000);
    const outcome = await result.reloads[0];
    // The reload read the file AFTER the rename; its exit and stderr come back.
    expect(readFileSync(marker, 'utf8')).toBe('new');
    expect(outcome).toMatchObject({ exitCode: 7, timedOut: false, stderrTail: 'bad things' });
    await channel.whenIdle!();
    socket.destroy();
  });

  it('an ErrorResponse, a close, a ReadyForQuery without AuthenticationOk, or the socket destroyed first: nothing renamed, the reload not run', async () => {
    for (const word of ['fail', 'close', 'early', 'destroy']) {
      const live = staged(word);
      const before = snapshotDir(path.join(tmp.dir, word));
      const socket = await channel.relay!.openSocket('127.0.0.1', port, life.signal);
      socket.on('error', () => undefined);
      const marker = path.join(tmp.dir, `${word}-ran`);
      const armed = socket.arm([live], [{ command: `touch ${marker}`, env: {}, timeoutMs: 5_000 }]);
      if (word === 'destroy') socket.destroy();
      else socket.write(word);
      expect(await armed, word).toEqual({ moved: false, reason: 'the login did not pass' });
      expect(snapshotDir(path.join(tmp.dir, word)), word).toEqual(before);
      expect(existsSync(marker), word).toBe(false);
      socket.destroy();
    }
  });

  it('a commit that carries a reload: renamed, then the reload runs once; a failed rename starts no reload', async () => {
    const live = staged('plain');
    const count = path.join(tmp.dir, 'plain', 'runs');
    const done = await channel.relay!.commitThen(
      [live],
      [{ command: `echo x >> ${count}`, env: {}, timeoutMs: 5_000 }],
      life.signal,
    );
    expect(readFileSync(live, 'utf8')).toBe('new');
    expect(await done.reloads[0]).toMatchObject({ exitCode: 0, timedOut: false });
    expect(readFileSync(count, 'utf8')).toBe('x\n');
    const missing = path.join(tmp.dir, 'nothing', 'web1_app');
    await expect(
      channel.relay!.commitThen(
        [missing],
        [{ command: `echo x >> ${count}`, env: {}, timeoutMs: 5_000 }],
        life.signal,
      ),
    ).rejects.toThrow(`no staged file ${missing}.next`);
    await channel.whenIdle!();
    expect(readFileSync(count, 'utf8')).toBe('x\n');
  });

  it('a connection refused on the machine is an error of the opening, not of the channel', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(channel.relay!.openSocket('127.0.0.1', free, life.signal)).rejects.toThrow(/connect/);
    // The channel still renames.
    const live = staged('after');
    await channel.commit([live], life.signal);
    expect(readFileSync(live, 'utf8')).toBe('new');
  });
});
