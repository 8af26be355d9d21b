/**
 * What every transport's provider lock must hold against a second controller, run on the local
 * transport (provider-lock-local.test.ts) and over a real sshd (provider-lock-ssh.test.ts):
 * a provider directory that did not exist when the first holder took the lock (it holds the
 * nearest existing ancestor) is still refused to a second controller once the first has created
 * it, and `mesh status`'s probe says who holds it; a holder that has flocked but not yet said who
 * is waited for, and one that lets go meanwhile is outlasted; one operation's own locks on a
 * shared ancestor are not another's. A refusal creates nothing.
 */
import {
  mkdirSync,
  openSync,
  closeSync,
  writeFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
} from 'node:fs';
import { constants } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { BoundTransport, MachineLock } from '../../src/mesh/transport.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';

export interface LockMachine {
  /** A controller of its own (its own connection over ssh): two of them are two controllers. */
  controller(): BoundTransport;
  /** Where a machine path is on this host (the machine's root for local, itself over ssh). */
  real(machinePath: string): string;
  /** A machine path for a mesh_dir nobody delivered to yet (it does not exist). */
  freshMeshDir(): string;
  /** Resolves once a taker of `realDir`'s lock has been refused its grace and waits for words (or `asked` settled). */
  waiting(realDir: string, asked: Promise<unknown>): Promise<void>;
}

/**
 * Once the agent's `lock`, refused its 0.1 s grace on `dir`, waits for the holder's words: some
 * process other than this one has the directory open (the agent's start can take longer than any
 * fixed sleep on a loaded machine, so the test watches for that), and 0.3 s more have passed
 * (well inside the second the agent waits).
 */
export async function waitingForWords(dir: string): Promise<void> {
  for (;;) {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && p !== String(process.pid))) {
      let fds: string[];
      try {
        fds = readdirSync(`/proc/${pid}/fd`);
      } catch {
        continue; // gone, or not ours to read
      }
      for (const fd of fds) {
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`) === dir)
            return await new Promise((r) => setTimeout(r, 300));
        } catch {
          // closed meanwhile
        }
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

const words = (command: string) => JSON.stringify({ command, pid: 1, host: 'h', since: 's', token: command });

/** A flock taken by this test on the real directory, as a holder between its flock and its words would be. */
async function rawFlock(dir: string): Promise<{ release(): void }> {
  const { flockSync } = (await import('fs-ext')).default;
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  flockSync(fd, 'exnb');
  return {
    release: () => {
      flockSync(fd, 'un');
      closeSync(fd);
    },
  };
}

const releaseAll = async (locks: readonly MachineLock[]) => {
  for (const l of locks) if (l.taken) await l.release();
};

export function lockContract(machine: () => LockMachine): void {
  it('refuses a second controller on a provider dir the first holder created after taking the lock (on its nearest ancestor); status names the first; another provider is not held up; the refusal creates nothing', async () => {
    const m = machine();
    const mesh = m.freshMeshDir();
    const dir = `${mesh}/provides/pg-main`;
    const first = m.controller();
    const second = m.controller();
    const held = await first.lock(dir, words('first'));
    expect(held.taken).toBe(true);
    // The first holder's staging creates the directory (and its parents) under its lock.
    mkdirSync(m.real(dir), { recursive: true, mode: 0o700 });
    const before = snapshotDir(m.real(mesh));
    expect(await second.lock(dir, words('second'))).toEqual({ taken: false, holder: words('first') });
    expect(snapshotDir(m.real(mesh))).toEqual(before);
    // mesh status's one read: the pair's provider lock is held, and by whom.
    expect((await second.digests([`${dir}/web1_app`]))[0]?.lockedBy).toBe(words('first'));
    // Another provider's first lock beside it is its own, not held up by the first's.
    const other = await second.lock(`${mesh}/provides/pg-other`, words('other'));
    expect(other.taken).toBe(true);
    await releaseAll([held, other]);
    expect((await second.digests([`${dir}/web1_app`]))[0]?.lockedBy).toBeUndefined();
    const next = await second.lock(dir, words('next'));
    expect(next.taken).toBe(true);
    await releaseAll([next]);
    // Let go: no holder's words left anywhere.
    expect(Object.keys(snapshotDir(m.real(mesh))).filter((k) => k.includes('.baton.lock'))).toEqual([]);
  });

  it('one operation that takes two never-delivered providers under the same ancestor holds both; a second controller is refused on each once they exist', async () => {
    const m = machine();
    const mesh = m.freshMeshDir();
    mkdirSync(m.real(`${mesh}/provides`), { recursive: true });
    const mine = m.controller();
    const a = await mine.lock(`${mesh}/provides/pg-a`, words('mine'));
    const b = await mine.lock(`${mesh}/provides/pg-b`, words('mine'));
    expect([a.taken, b.taken]).toEqual([true, true]);
    mkdirSync(m.real(`${mesh}/provides/pg-a`));
    mkdirSync(m.real(`${mesh}/provides/pg-b`));
    const theirs = m.controller();
    expect(await theirs.lock(`${mesh}/provides/pg-b`, words('theirs'))).toEqual({
      taken: false,
      holder: words('mine'),
    });
    expect(await theirs.lock(`${mesh}/provides/pg-a`, words('theirs'))).toEqual({
      taken: false,
      holder: words('mine'),
    });
    await releaseAll([b, a]);
    const after = await theirs.lock(`${mesh}/provides/pg-b`, words('theirs'));
    expect(after.taken).toBe(true);
    await releaseAll([after]);
  });

  it('waits for the words of a holder that has flocked but not yet written them, and names it', async () => {
    const m = machine();
    const dir = `${m.freshMeshDir()}/provides/pg-main`;
    mkdirSync(m.real(dir), { recursive: true });
    const holder = await rawFlock(m.real(dir));
    try {
      const asked = m.controller().lock(dir, words('second'));
      // Its durable write lands well after the 0.1 s grace (as under load).
      await m.waiting(m.real(dir), asked);
      writeFileSync(path.join(m.real(dir), '.baton.lock.holder'), `${words('slow')}\n`);
      expect(await asked).toEqual({ taken: false, holder: words('slow') });
    } finally {
      holder.release();
    }
  });

  it('takes the lock when a holder that never said who lets go while it waits (a probe, or a holder that removed its words and is closing)', async () => {
    const m = machine();
    const dir = `${m.freshMeshDir()}/provides/pg-main`;
    mkdirSync(m.real(dir), { recursive: true });
    const holder = await rawFlock(m.real(dir));
    const asked = m.controller().lock(dir, words('second'));
    await m.waiting(m.real(dir), asked);
    holder.release();
    const lock = await asked;
    expect(lock.taken).toBe(true);
    await releaseAll([lock]);
    expect(existsSync(path.join(m.real(dir), '.baton.lock.holder'))).toBe(false);
  });

  it('still refuses, saying it has not said who, a holder that never writes its words', async () => {
    const m = machine();
    const dir = `${m.freshMeshDir()}/provides/pg-main`;
    mkdirSync(m.real(dir), { recursive: true });
    const holder = await rawFlock(m.real(dir));
    try {
      expect(await m.controller().lock(dir, words('second'))).toEqual({ taken: false, holder: undefined });
    } finally {
      holder.release();
    }
  });
  it('words left by a holder killed -9 (its lock free) are stale: status names nobody, the next controller takes the lock and no words outlive it', async () => {
    const m = machine();
    const dir = `${m.freshMeshDir()}/provides/pg-main`;
    mkdirSync(m.real(dir), { recursive: true });
    writeFileSync(path.join(m.real(dir), '.baton.lock.holder'), `${words('killed')}\n`);
    const controller = m.controller();
    expect((await controller.digests([`${dir}/web1_app`]))[0]?.lockedBy).toBeUndefined();
    const lock = await controller.lock(dir, words('next'));
    expect(lock.taken).toBe(true);
    expect((await m.controller().digests([`${dir}/web1_app`]))[0]?.lockedBy).toBe(words('next'));
    await releaseAll([lock]);
    expect(existsSync(path.join(m.real(dir), '.baton.lock.holder'))).toBe(false);
  });
}

/**
 * The pid of this process's child that holds a lock session on `dir` (the ssh client over ssh,
 * the agent's perl locally), found by its argv: the agent's `lock` mode and the directory.
 */
export function lockSessionPid(dir: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const ppid = Number(
        readFileSync(`/proc/${pid}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[1],
      );
      if (ppid !== process.pid) continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (argv.includes('lock') && argv.includes(dir)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Resolves once `file` is gone, or rejects after `ms`. */
export async function goneWithin(file: string, ms: number): Promise<void> {
  for (const end = Date.now() + ms; existsSync(file);) {
    if (Date.now() > end) throw new Error(`${file} is still there after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
