/**
 * The machine side's contract: ONE set of cases over the Transport interface (src/mesh/transport.ts),
 * run against every way baton reaches the agent (agent/baton-agent.pl, docs/agent-protocol.md):
 * the local transport (agent-contract-local.test.ts) and ssh to a real sshd
 * (agent-contract-ssh.test.ts). Each case asserts what the operation answers AND what is on disk
 * afterwards, read on this host (the machine's files are here for both). A transport-specific
 * test (ssh's processes, connection sharing, drops, start limits) stays in its own file;
 * everything the agent does for every transport belongs here (docs/testing.md, "The agent contract: one set of cases, every transport").
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  openSync,
  closeSync,
  constants,
} from 'node:fs';
import { createHash } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatConsumerConninfo } from '../../src/mesh/alternating.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { Secret } from '../../src/mesh/secret.js';
import { AGENT_PROTOCOL } from '../../src/transport/agent-protocol.js';
import {
  TransportError,
  type MachineLock,
  type TextChange,
  type Transport,
} from '../../src/mesh/transport.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { agentSpeaking, sendInstead } from './agent-contract-program.js';

export interface AgentMachine {
  /** A transport to the machine with a connection of its own: two of them are two controllers. */
  transport(): Transport;
  /** A machine path for a directory nobody created yet, new on every call. */
  freshDir(): string;
  /** Where a machine path is on this host (under the machine's root for local, itself over ssh). */
  real(machinePath: string): string;
}

/** Every call's bound: long enough never to fire on a loaded machine, short enough to end a hang. */
const within = () => AbortSignal.timeout(30_000);

const failure = async (p: Promise<unknown>): Promise<string> => {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TransportError);
  return (error as TransportError).reason;
};

const words = (command: string) => JSON.stringify({ command, pid: 1, host: 'h', since: 's', token: command });

/** The listing of a directory on this host, sorted. */
const ls = (dir: string) => readdirSync(dir).sort();

const modeOf = (file: string) => statSync(file).mode & 0o777;

/** Written as the provisioner writes a receipt: whole, by rename (a plain write can be read empty). */
function writeByRename(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/** A backend message as PostgreSQL frames it: type, int32 length, body. */
function pgMessage(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** A server on this host that answers `pass` as a login that passed, `fail` as a refused one, else echoes. */
async function fakeDatabase(): Promise<{ port: number; close(): void }> {
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', (data) => {
      const word = data.toString('latin1');
      if (word.includes('pass'))
        socket.write(Buffer.concat([pgMessage('R', Buffer.alloc(4)), pgMessage('Z', Buffer.from('I'))]));
      else if (word.includes('fail')) socket.write(pgMessage('E', Buffer.from('SFATAL\0C28P01\0Mno\0\0')));
      else socket.write(data);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** A flock taken by this test on a real directory, as a holder between its flock and its words would be. */
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

/**
 * Resolves once the agent's `lock`, refused its 0.1 s grace on `dir`, waits for the holder's words:
 * some process other than this one has the directory open (its start can take longer than any
 * fixed sleep on a loaded machine), and 0.3 s more have passed (inside the second it waits).
 */
async function waitingForWords(dir: string, asked: Promise<unknown>): Promise<void> {
  let settled = false as boolean; // set by the promise
  void asked.finally(() => (settled = true));
  while (!settled) {
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

const releaseAll = async (locks: readonly MachineLock[]) => {
  for (const l of locks) if (l.taken) await l.release();
};

/** Resolves once `file` is gone, or fails after `ms`. */
async function goneWithin(file: string, ms: number): Promise<void> {
  for (const end = Date.now() + ms; existsSync(file);) {
    if (Date.now() > end) throw new Error(`${file} is still there after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function agentContract(machine: () => AgentMachine): void {
  afterEach(() => sendInstead(undefined));

  describe('resolve', () => {
    it("answers the agent's hello; an agent speaking another protocol is refused by resolve and by the rename channel, and nothing is written", async () => {
      const m = machine();
      const dir = m.freshDir();
      mkdirSync(m.real(dir), { recursive: true });
      await m.transport().resolve(within());
      sendInstead(agentSpeaking(AGENT_PROTOCOL + 1));
      const stale = m.transport();
      const before = snapshotDir(m.real(dir));
      expect(await failure(stale.resolve(within()))).toBe(
        `the agent answered in protocol v${AGENT_PROTOCOL + 1}, not baton's v${AGENT_PROTOCOL}: it is not the agent this baton sent`,
      );
      expect(await failure(stale.openChannel!(within()))).toBe(
        `the rename channel answered in protocol v${AGENT_PROTOCOL + 1}, not baton's v${AGENT_PROTOCOL}: it is not the agent this baton sent`,
      );
      expect(snapshotDir(m.real(dir))).toEqual(before);
    });
  });

  describe('stage and commit', () => {
    it('stage writes each <path>.next 0600 under no other name (new directories 0700) and answers what landed; a second stage of the path replaces it whole', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const [provider, consumer] = [`${dir}/provides/pg-main/web1_app`, `${dir}/consumes/pg-main/web1_app`];
      const [a, b] = [Secret.generate(), Secret.generate()];
      expect(
        await t.stage(
          [
            { path: provider, secret: a },
            { path: consumer, secret: b },
          ],
          within(),
        ),
      ).toEqual([a.digest, b.digest]);
      for (const [live, secret] of [
        [provider, a],
        [consumer, b],
      ] as const) {
        expect(ls(path.dirname(m.real(live)))).toEqual(['web1_app.next']);
        expect(readFileSync(m.real(`${live}.next`), 'utf8')).toBe(secret.reveal());
        expect(modeOf(m.real(`${live}.next`))).toBe(0o600);
      }
      for (const d of [dir, `${dir}/provides`, `${dir}/provides/pg-main`, `${dir}/consumes/pg-main`])
        expect(modeOf(m.real(d))).toBe(0o700);
      const inode = statSync(m.real(`${provider}.next`)).ino;
      const again = Secret.generate();
      expect(await t.stage([{ path: provider, secret: again }], within())).toEqual([again.digest]);
      expect(ls(path.dirname(m.real(provider)))).toEqual(['web1_app.next']);
      expect(readFileSync(m.real(`${provider}.next`), 'utf8')).toBe(again.reveal());
      expect(statSync(m.real(`${provider}.next`)).ino).not.toBe(inode);
      expect(await t.digests([provider], within())).toEqual([{ live: undefined, next: again.digest }]);
    });

    it('commit renames each .next over its live file at both ends (a new inode, 0600, nothing staged left) and digests read it back', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const ends = [`${dir}/provides/pg-main/web1_app`, `${dir}/consumes/pg-main/web1_app`];
      await t.stage(
        ends.map((p) => ({ path: p, secret: Secret.generate() })),
        within(),
      );
      await t.commit(ends, within());
      const inodes = ends.map((p) => statSync(m.real(p)).ino);
      const fresh = ends.map(() => Secret.generate());
      await t.stage(
        ends.map((p, i) => ({ path: p, secret: fresh[i]! })),
        within(),
      );
      await t.commit(ends, within());
      for (const [i, live] of ends.entries()) {
        expect(readFileSync(m.real(live), 'utf8')).toBe(fresh[i]!.reveal());
        expect(statSync(m.real(live)).ino).not.toBe(inodes[i]);
        expect(modeOf(m.real(live))).toBe(0o600);
        expect(ls(path.dirname(m.real(live)))).toEqual(['web1_app']);
      }
      expect(await t.digests(ends, within())).toEqual(
        ends.map((live, i) => ({
          live: fresh[i]!.digest,
          next: undefined,
          // Whole seconds, as every holder says it (the agent's stat).
          liveModifiedMs: Math.floor(statSync(m.real(live)).mtimeMs / 1000) * 1000,
        })),
      );
    });

    it('commit stops at a path with nothing staged (its directory missing), naming it: the paths before it are renamed, the ones after it still staged', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const [first, missing, last] = [`${dir}/a/web1_app`, `${dir}/missing/web1_app`, `${dir}/a/web2_app`];
      await t.stage(
        [first, last].map((p) => ({ path: p, secret: Secret.generate() })),
        within(),
      );
      expect(await failure(t.commit([first, missing, last], within()))).toContain(
        `no staged file ${m.real(missing)}.next`,
      );
      expect(ls(m.real(`${dir}/a`))).toEqual(['web1_app', 'web2_app.next']);
      expect(existsSync(m.real(`${dir}/missing`))).toBe(false);
    });
  });

  describe('records with the step they announce (one request)', () => {
    it('writes the records, then stages: both land and the staged digests are answered; a record that cannot be written fails naming it and stages nothing', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const live = `${dir}/provides/pg-main/web1_app`;
      const intent = `${dir}/provides/pg-main/.web1_app.rotation`;
      const secret = Secret.generate();
      expect(
        await t.writeRecordsThen(
          [{ path: intent, text: '{"phase":"preparing"}' }],
          { stage: [{ path: live, secret }] },
          within(),
        ),
      ).toEqual([secret.digest]);
      expect(readFileSync(m.real(intent), 'utf8')).toBe('{"phase":"preparing"}\n');
      expect(readFileSync(m.real(`${live}.next`), 'utf8')).toBe(secret.reveal());
      // A record under a path whose directory is a file: nothing after it runs.
      const blocked = `${dir}/consumes`;
      writeFileSync(m.real(blocked), 'in the way');
      const other = `${dir}/provides/pg-main/web2_app`;
      const reason = await failure(
        t.writeRecordsThen(
          [{ path: `${blocked}/pg-main/.web1_app.rotation`, text: '{"end":"consumes"}' }],
          { stage: [{ path: other, secret: Secret.generate() }] },
          within(),
        ),
      );
      expect(reason).toContain(m.real(`${blocked}/pg-main`));
      expect(ls(m.real(`${dir}/provides/pg-main`))).toEqual(['.web1_app.rotation', 'web1_app.next']);
    });

    it('writes the records, then keeps and (commit: true) renames: the kept digest is answered; without the renames the kept file is the live one, and unstage takes that keep back', async () => {
      const m = machine();
      const t = m.transport();
      const dir = `${m.freshDir()}/provides/pg-main`;
      const live = `${dir}/web1_app`;
      const intent = `${dir}/.web1_app.rotation`;
      const [old, fresh] = [Secret.generate(), Secret.generate()];
      await t.stage([{ path: live, secret: old }], within());
      await t.commit([live], within());
      await t.stage([{ path: live, secret: fresh }], within());
      // A channel carries the renames: the keep alone, the live file kept by a hard link.
      expect(
        await t.writeRecordsThen(
          [{ path: intent, text: '{"phase":"committing"}' }],
          { keep: [live], commit: false },
          within(),
        ),
      ).toEqual([old.digest]);
      expect(statSync(m.real(`${dir}/.web1_app.prev`)).ino).toBe(statSync(m.real(live)).ino);
      // The renames never came (a roll-back of a provider end that did not go live): unstage
      // removes the staged file and that keep, which holds nothing the live file does not.
      await t.unstage([live], within());
      expect(ls(m.real(dir))).toEqual(['.web1_app.rotation', 'web1_app']);
      await t.stage([{ path: live, secret: fresh }], within());
      expect(
        await t.writeRecordsThen(
          [{ path: intent, text: '{"phase":"committing","n":2}' }],
          { keep: [live], commit: true },
          within(),
        ),
      ).toEqual([old.digest]);
      expect(readFileSync(m.real(live), 'utf8')).toBe(fresh.reveal());
      expect(readFileSync(m.real(`${dir}/.web1_app.prev`), 'utf8')).toBe(old.reveal());
      expect(readFileSync(m.real(intent), 'utf8')).toBe('{"phase":"committing","n":2}\n');
      // A kept file that is not the live one (the commit came) is no keep to take back.
      await t.unstage([live], within());
      expect(ls(m.real(dir))).toEqual(['.web1_app.prev', '.web1_app.rotation', 'web1_app']);
    });
  });

  describe('keep, restore, discard, unstage, retire', () => {
    it('keeps the previous file at a commit (a retried keep keeps the same), restores it removing the receipt and keeping the taken file 0600, or discards it', async () => {
      const m = machine();
      const t = m.transport();
      const dir = `${m.freshDir()}/provides/pg-main`;
      const live = `${dir}/web1_app`;
      const old = Secret.generate();
      await t.stage([{ path: live, secret: old }], within());
      await t.commit([live], within());
      const fresh = Secret.generate();
      await t.stage([{ path: live, secret: fresh }], within());
      expect(await t.keepPrevious([live], within())).toEqual([old.digest]);
      expect(await t.keepPrevious([live], within())).toEqual([old.digest]);
      // A hard link: no copy of the secret passed through anyone.
      expect(statSync(m.real(`${dir}/.web1_app.prev`)).ino).toBe(statSync(m.real(live)).ino);
      await t.commit([live], within());
      expect(ls(m.real(dir))).toEqual(['.web1_app.prev', 'web1_app']);
      expect((await t.digests([live], within()))[0]).toMatchObject({ live: fresh.digest, prev: old.digest });
      writeByRename(m.real(`${dir}/.applied/web1_app`), `web1_app ${fresh.digest}\n`);
      expect(await t.restorePrevious([live, `${dir}/nobody`], within())).toEqual([true, false]);
      expect(readFileSync(m.real(live), 'utf8')).toBe(old.reveal());
      expect(ls(m.real(dir))).toEqual(['.applied', '.web1_app.rolled-back', 'web1_app']);
      expect(readFileSync(m.real(`${dir}/.web1_app.rolled-back`), 'utf8')).toBe(fresh.reveal());
      expect(modeOf(m.real(`${dir}/.web1_app.rolled-back`))).toBe(0o600);
      expect(ls(m.real(`${dir}/.applied`))).toEqual([]);
      expect((await t.digests([live], within()))[0]).not.toHaveProperty('prev');
      // No live file before the commit: the kept file is empty, and restoring it removes the live one.
      const first = `${dir}/web2_app`;
      await t.stage([{ path: first, secret: fresh }], within());
      expect(await t.keepPrevious([first], within())).toEqual([undefined]);
      expect(readFileSync(m.real(`${dir}/.web2_app.prev`), 'utf8')).toBe('');
      await t.commit([first], within());
      expect(await t.restorePrevious([first], within())).toEqual([true]);
      expect(existsSync(m.real(first))).toBe(false);
      await t.stage([{ path: live, secret: fresh }], within());
      await t.keepPrevious([live], within());
      await t.commit([live], within());
      await t.discardPrevious([live, first], within());
      expect(ls(m.real(dir))).toEqual(['.applied', 'web1_app']);
    });

    it("unstage removes the staged file and every temp a cut-short stage left, and nothing else: the live file, another role's staged file, a non-UTF-8 name", async () => {
      const m = machine();
      const t = m.transport();
      const dir = `${m.freshDir()}/provides/pg-main`;
      const live = `${dir}/web1_app`;
      const old = Secret.generate();
      await t.stage([{ path: live, secret: old }], within());
      await t.commit([live], within());
      await t.stage([{ path: live, secret: Secret.generate() }], within());
      writeFileSync(m.real(`${live}.next.tmp.4242`), 'half a sec');
      writeFileSync(m.real(`${dir}/web1_app2.next`), 'theirs');
      const odd = Buffer.concat([Buffer.from(`${m.real(dir)}/`), Buffer.from([0x77, 0xff, 0xfe])]);
      writeFileSync(odd, 'odd');
      await t.unstage([live, `${dir}/absent`], within());
      expect(ls(m.real(dir))).toEqual(['web1_app', 'web1_app2.next', 'w\ufffd\ufffd']);
      expect(readFileSync(m.real(live), 'utf8')).toBe(old.reveal());
      expect(readFileSync(odd, 'utf8')).toBe('odd');
    });

    it("retire removes a switched pair's file with its staged, kept and rolled-back copies and its receipt, and nothing beside it", async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(`${dir}/.applied`), { recursive: true });
      for (const f of [
        'web1_app',
        'web1_app.next',
        '.web1_app.prev',
        '.web1_app.rolled-back',
        '.applied/web1_app',
        'web1_app+a',
        '.applied/web1_app+a',
      ])
        writeFileSync(m.real(`${dir}/${f}`), 'x', { mode: 0o600 });
      await m.transport().retire([`${dir}/web1_app`, `${dir}/absent`], within());
      expect(ls(m.real(dir))).toEqual(['.applied', 'web1_app+a']);
      expect(ls(m.real(`${dir}/.applied`))).toEqual(['web1_app+a']);
    });
  });

  describe('reading', () => {
    it('digests and texts: a missing file is absent, a symlink is read through (a dangling one is absent), a directory where a file should be is absent and cannot be committed over', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      mkdirSync(m.real(`${dir}/in-the-way`), { recursive: true });
      writeFileSync(m.real(`${dir}/target`), 'user=web1_app_a password=x\nsecond line\n');
      symlinkSync(m.real(`${dir}/target`), m.real(`${dir}/link`));
      symlinkSync(m.real(`${dir}/nowhere`), m.real(`${dir}/dangling`));
      const paths = ['missing', 'link', 'dangling', 'in-the-way'].map((n) => `${dir}/${n}`);
      const read = await t.digests(paths, within());
      expect(read[0]).toEqual({ live: undefined, next: undefined });
      expect(read[1]).toMatchObject({
        live: secretDigest(readFileSync(m.real(`${dir}/target`))),
        liveLogin: 'web1_app_a',
      });
      expect(read[2]).toEqual({ live: undefined, next: undefined });
      expect(read[3]).toEqual({ live: undefined, next: undefined });
      expect(await t.readTexts(paths, within())).toEqual([
        undefined,
        'user=web1_app_a password=xsecond line',
        undefined,
        undefined,
      ]);
      const before = snapshotDir(m.real(dir));
      await t.stage([{ path: `${dir}/in-the-way`, secret: Secret.generate() }], within());
      expect(await failure(t.commit([`${dir}/in-the-way`], within()))).toMatch(
        new RegExp(`could not rename ${m.real(`${dir}/in-the-way`)}\\.next: Is a directory`),
      );
      expect(lstatSync(m.real(`${dir}/in-the-way`)).isDirectory()).toBe(true);
      await t.unstage([`${dir}/in-the-way`], within());
      expect(snapshotDir(m.real(dir))).toEqual(before);
    });

    it('names the login of an alternating consumer end without sending its password back, and none for a bare secret', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/consumes/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      writeFileSync(m.real(`${dir}/web1_app`), formatConsumerConninfo('web1_app_b', 'pw-must-not-travel'), {
        mode: 0o600,
      });
      writeFileSync(m.real(`${dir}/web2_app`), 'user=looks-like-but-is-a-secret', { mode: 0o600 });
      const [alternating, single] = await m
        .transport()
        .digests([`${dir}/web1_app`, `${dir}/web2_app`], within());
      expect(alternating).toMatchObject({
        live: secretDigest(readFileSync(m.real(`${dir}/web1_app`))),
        liveLogin: 'web1_app_b',
      });
      expect(single).toMatchObject({ live: secretDigest('user=looks-like-but-is-a-secret') });
      expect(single).not.toHaveProperty('liveLogin');
      expect(JSON.stringify([alternating, single])).not.toContain('pw-must-not-travel');
    });

    it('hostile names (spaces, a leading dash) go through every operation as given; non-UTF-8 content is digested as its bytes; a path with a line break is refused before anything is sent', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const names = [`${dir}/with space/a b`, `${dir}/-rf`, `${dir}/--help`, `${dir}/-`];
      const secrets = names.map(() => Secret.generate());
      const staged = names.map((p, i) => ({ path: p, secret: secrets[i]! }));
      expect(await t.stage(staged, within())).toEqual(secrets.map((s) => s.digest));
      expect(await t.keepPrevious(names, within())).toEqual(names.map(() => undefined));
      await t.commit(names, within());
      expect((await t.digests(names, within())).map((d) => [d.live, d.prev])).toEqual(
        secrets.map((s) => [s.digest, secretDigest('')]),
      );
      expect(await t.readTexts(names, within())).toEqual(secrets.map((s) => s.reveal()));
      expect(await t.restorePrevious(names, within())).toEqual(names.map(() => true));
      expect(names.map((p) => existsSync(m.real(p)))).toEqual(names.map(() => false));
      await t.retire(names, within());
      expect(ls(m.real(dir))).toEqual(['with space']);
      expect(ls(m.real(`${dir}/with space`))).toEqual([]);

      const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x0a, 0x62]);
      writeFileSync(m.real(`${dir}/odd`), bytes);
      expect((await t.digests([`${dir}/odd`], within()))[0]?.live).toBe(secretDigest(bytes));
      expect(await t.readTexts([`${dir}/odd`], within())).toEqual(['a\ufffd\ufffdb']);

      const before = snapshotDir(m.real(dir));
      const broken = `${dir}/a\nb`;
      const refusals = [
        t.stage([{ path: broken, secret: Secret.generate() }], within()),
        t.commit([broken], within()),
        t.unstage([broken], within()),
        t.keepPrevious([broken], within()),
        t.restorePrevious([broken], within()),
        t.discardPrevious([broken], within()),
        t.retire([broken], within()),
        t.digests([broken], within()),
        t.readTexts([broken], within()),
        t.writeRecords([{ path: broken, text: '{}' }], within()),
      ];
      for (const refused of refusals)
        expect(await failure(refused)).toContain(
          `a path with a line break cannot be sent: ${JSON.stringify(broken)}`,
        );
      expect(snapshotDir(m.real(dir))).toEqual(before);
    });

    it('writeRecords writes each record whole with a line break, 0600, and texts read it back; a record with a line break is refused', async () => {
      const m = machine();
      const t = m.transport();
      const dir = `${m.freshDir()}/provides/pg-main`;
      const record = `${dir}/.web1_app.rotation`;
      await t.writeRecords([{ path: record, text: '{"phase":"prepared"}' }], within());
      expect(readFileSync(m.real(record), 'utf8')).toBe('{"phase":"prepared"}\n');
      expect(modeOf(m.real(record))).toBe(0o600);
      expect(ls(m.real(dir))).toEqual(['.web1_app.rotation']);
      expect((await t.digests([`${dir}/web1_app`], within()))[0]?.record).toBe('{"phase":"prepared"}');
      expect(await failure(t.writeRecords([{ path: record, text: 'a\nb' }], within()))).toContain(
        'a record with a line break cannot be written',
      );
      expect(readFileSync(m.real(record), 'utf8')).toBe('{"phase":"prepared"}\n');
    });

    it('readWholeText reads a file byte for byte with its sha256; swapText replaces it only while that digest holds, keeping its mode, by rename; absent and changed are said', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const file = `${dir}/userlist.txt`;
      mkdirSync(m.real(dir), { recursive: true });
      const text = '"admin" "pw"\n; a comment, "quoted"\n\n"web1_app" "SCRAM-SHA-256$4096:c2FsdA==$AA:BB"\n';
      writeFileSync(m.real(file), text, { mode: 0o640 });
      const inodeBefore = statSync(m.real(file)).ino;
      expect(await t.readWholeText!(`${dir}/absent`, within())).toBeUndefined();
      const read = await t.readWholeText!(file, within());
      expect(read).toEqual({ text, sha256: createHash('sha256').update(text).digest('hex') });
      // A digest that no longer holds: nothing written, the file as it was.
      const stale = createHash('sha256').update('another text').digest('hex');
      expect(await t.swapText!(file, stale, 'lost\n', within())).toBe(false);
      expect(readFileSync(m.real(file), 'utf8')).toBe(text);
      const next = text.replace('$AA:BB', '$CC:DD');
      expect(await t.swapText!(file, read!.sha256, next, within())).toBe(true);
      expect(readFileSync(m.real(file), 'utf8')).toBe(next);
      expect(modeOf(m.real(file))).toBe(0o640);
      expect(statSync(m.real(file)).ino).not.toBe(inodeBefore);
      // The first digest is spent: a second swap from it is refused, and no temp is left beside the file.
      expect(await t.swapText!(file, read!.sha256, 'again\n', within())).toBe(false);
      expect(readFileSync(m.real(file), 'utf8')).toBe(next);
      expect(ls(m.real(dir))).toEqual(['userlist.txt']);
      // An empty text is a text; a missing file cannot be swapped.
      const now = await t.readWholeText!(file, within());
      expect(await t.swapText!(file, now!.sha256, '', within())).toBe(true);
      expect(await t.readWholeText!(file, within())).toEqual({
        text: '',
        sha256: createHash('sha256').digest('hex'),
      });
      expect(await failure(t.swapText!(`${dir}/absent`, now!.sha256, 'x\n', within()))).toContain('no file');
      expect(ls(m.real(dir))).toEqual(['userlist.txt']);
    });

    it("swapText removes a temp a cut-short swap left a minute ago, never a younger one (another writer's, mid-write: no lock of baton's guards a pooler's auth_file)", async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const file = `${dir}/userlist.txt`;
      mkdirSync(m.real(dir), { recursive: true });
      writeFileSync(m.real(file), '"web1_app" "old"\n', { mode: 0o640 });
      writeFileSync(m.real(`${file}.tmp.4242`), 'mid-write', { mode: 0o600 });
      writeFileSync(m.real(`${file}.tmp.4343`), 'left by a kill', { mode: 0o600 });
      const twoMinutesAgo = new Date(Date.now() - 120_000);
      utimesSync(m.real(`${file}.tmp.4343`), twoMinutesAgo, twoMinutesAgo);
      const read = await t.readWholeText!(file, within());
      expect(await t.swapText!(file, read!.sha256, '"web1_app" "new"\n', within())).toBe(true);
      expect(ls(m.real(dir))).toEqual(['userlist.txt', 'userlist.txt.tmp.4242']);
      expect(readFileSync(m.real(`${file}.tmp.4242`), 'utf8')).toBe('mid-write');
    });

    it('watchTexts reports every path first, then each change written by rename, only what changed', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/.applied`;
      mkdirSync(m.real(dir), { recursive: true });
      writeFileSync(m.real(`${dir}/a`), 'first\n');
      const reports: (readonly TextChange[])[] = [];
      const stop = new AbortController();
      const watching = m.transport().watchTexts!(
        [`${dir}/a`, `${dir}/b`],
        { intervalMs: 10, forMs: 20_000 },
        (c) => reports.push(c),
        stop.signal,
      );
      await vi.waitFor(() => expect(reports).toHaveLength(1), { timeout: 10_000, interval: 10 });
      const written = Date.now();
      writeByRename(m.real(`${dir}/b`), 'second\n');
      await vi.waitFor(() => expect(reports).toHaveLength(2), { timeout: 10_000, interval: 5 });
      // Soon, and long before the 20 s watch ends: the machine reads the files itself, not a call
      // per poll. (A bound of a few hundred ms would fail on a loaded CI worker, not on a defect.)
      expect(Date.now() - written).toBeLessThan(10_000);
      writeByRename(m.real(`${dir}/a`), 'third\n');
      await vi.waitFor(() => expect(reports).toHaveLength(3), { timeout: 10_000, interval: 10 });
      stop.abort();
      await watching;
      expect(reports).toEqual([
        [
          { index: 0, text: 'first' },
          { index: 1, text: undefined },
        ],
        [{ index: 1, text: 'second' }],
        [{ index: 0, text: 'third' }],
      ]);
    });
  });

  describe('the provider lock', () => {
    it('taken, refused to a second controller with the holder words, named by the digests read, released: free, and no words left', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      const [first, second] = [m.transport(), m.transport()];
      const held = await first.lock(dir, words('first'), within());
      expect(held.taken).toBe(true);
      expect(readFileSync(m.real(`${dir}/.baton.lock.holder`), 'utf8')).toBe(`${words('first')}\n`);
      const before = snapshotDir(m.real(dir));
      expect(await second.lock(dir, words('second'), within())).toEqual({
        taken: false,
        holder: words('first'),
      });
      expect(snapshotDir(m.real(dir))).toEqual(before);
      expect((await second.digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBe(words('first'));
      await releaseAll([held]);
      expect(existsSync(m.real(`${dir}/.baton.lock.holder`))).toBe(false);
      expect((await second.digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBeUndefined();
      const next = await second.lock(dir, words('next'), within());
      expect(next.taken).toBe(true);
      await releaseAll([next]);
      expect(ls(m.real(dir))).toEqual([]);
    });

    it("a holder whose session is stopped without a release (its command cancelled: the agent's stdin ends) removes its words; the lock is free", async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      const cancel = new AbortController();
      expect((await m.transport().lock(dir, words('cancelled'), cancel.signal)).taken).toBe(true);
      cancel.abort(new Error('cancelled'));
      await goneWithin(m.real(`${dir}/.baton.lock.holder`), 10_000);
      const next = await m.transport().lock(dir, words('next'), within());
      expect(next.taken).toBe(true);
      await releaseAll([next]);
    });

    it('refuses a second controller on a provider dir the first holder created after taking the lock (on its nearest ancestor); another provider is not held up; the refusal creates nothing', async () => {
      const m = machine();
      const mesh = m.freshDir();
      const dir = `${mesh}/provides/pg-main`;
      const [first, second] = [m.transport(), m.transport()];
      mkdirSync(m.real(path.dirname(mesh)), { recursive: true });
      const held = await first.lock(dir, words('first'), within());
      expect(held.taken).toBe(true);
      mkdirSync(m.real(dir), { recursive: true, mode: 0o700 });
      const before = snapshotDir(m.real(mesh));
      expect(await second.lock(dir, words('second'), within())).toEqual({
        taken: false,
        holder: words('first'),
      });
      expect(snapshotDir(m.real(mesh))).toEqual(before);
      expect((await second.digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBe(words('first'));
      const other = await second.lock(`${mesh}/provides/pg-other`, words('other'), within());
      expect(other.taken).toBe(true);
      await releaseAll([held, other]);
      expect((await second.digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBeUndefined();
      const next = await second.lock(dir, words('next'), within());
      expect(next.taken).toBe(true);
      await releaseAll([next]);
      expect(Object.keys(snapshotDir(m.real(mesh))).filter((k) => k.includes('.baton.lock'))).toEqual([]);
    });

    it('one operation that takes two never-delivered providers under one ancestor holds both; a second controller is refused on each once they exist', async () => {
      const m = machine();
      const mesh = m.freshDir();
      mkdirSync(m.real(`${mesh}/provides`), { recursive: true });
      const mine = m.transport();
      const a = await mine.lock(`${mesh}/provides/pg-a`, words('mine'), within());
      const b = await mine.lock(`${mesh}/provides/pg-b`, words('mine'), within());
      expect([a.taken, b.taken]).toEqual([true, true]);
      mkdirSync(m.real(`${mesh}/provides/pg-a`));
      mkdirSync(m.real(`${mesh}/provides/pg-b`));
      const theirs = m.transport();
      for (const p of ['pg-b', 'pg-a'])
        expect(await theirs.lock(`${mesh}/provides/${p}`, words('theirs'), within())).toEqual({
          taken: false,
          holder: words('mine'),
        });
      await releaseAll([b, a]);
      const after = await theirs.lock(`${mesh}/provides/pg-b`, words('theirs'), within());
      expect(after.taken).toBe(true);
      await releaseAll([after]);
    });

    it('waits for the words of a holder that has flocked but not yet written them, and names it; still refuses, unnamed, one that never writes them', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      const holder = await rawFlock(m.real(dir));
      try {
        expect(await m.transport().lock(dir, words('second'), within())).toEqual({
          taken: false,
          holder: undefined,
        });
        const asked = m.transport().lock(dir, words('second'), within());
        await waitingForWords(m.real(dir), asked);
        writeFileSync(m.real(`${dir}/.baton.lock.holder`), `${words('slow')}\n`);
        expect(await asked).toEqual({ taken: false, holder: words('slow') });
      } finally {
        holder.release();
      }
    });

    it('takes the lock when a holder that never said who lets go while it waits', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      const holder = await rawFlock(m.real(dir));
      const asked = m.transport().lock(dir, words('second'), within());
      await waitingForWords(m.real(dir), asked);
      holder.release();
      const lock = await asked;
      expect(lock.taken).toBe(true);
      await releaseAll([lock]);
      expect(existsSync(m.real(`${dir}/.baton.lock.holder`))).toBe(false);
    });

    it('words left by a holder killed -9 (its lock free) are stale: the digests read names nobody, the next controller takes the lock and no words outlive it', async () => {
      const m = machine();
      const dir = `${m.freshDir()}/provides/pg-main`;
      mkdirSync(m.real(dir), { recursive: true });
      writeFileSync(m.real(`${dir}/.baton.lock.holder`), `${words('killed')}\n`);
      const t = m.transport();
      expect((await t.digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBeUndefined();
      const lock = await t.lock(dir, words('next'), within());
      expect(lock.taken).toBe(true);
      expect((await m.transport().digests([`${dir}/web1_app`], within()))[0]?.lockedBy).toBe(words('next'));
      await releaseAll([lock]);
      expect(existsSync(m.real(`${dir}/.baton.lock.holder`))).toBe(false);
    });
  });

  describe('the rename channel', () => {
    it("measures the machine's clock within its bound, renames timed by it, names a path with nothing staged and refuses one with a line break", async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const live = `${dir}/consumes/pg-main/web1_app`;
      const secret = Secret.generate();
      await t.stage([{ path: live, secret }], within());
      const life = new AbortController();
      const channel = await t.openChannel!(life.signal);
      try {
        // The same host: the offset is zero within its own bound (and the few ms the monotonic
        // clock baton reads drifts from the realtime one the agent reads).
        expect(Math.abs(channel.clock.offsetMs)).toBeLessThanOrEqual(channel.clock.withinMs + 20);
        const before = Date.now();
        const at = await channel.commit([live], within());
        expect(at).toBeGreaterThanOrEqual(before - 20);
        expect(at).toBeLessThanOrEqual(Date.now() + 20);
        expect(readFileSync(m.real(live), 'utf8')).toBe(secret.reveal());
        expect(ls(path.dirname(m.real(live)))).toEqual(['web1_app']);
        await expect(channel.commit([`${dir}/none`], within())).rejects.toThrow(
          `no staged file ${m.real(`${dir}/none`)}.next`,
        );
        await expect(channel.commit([`${dir}/a\nb`], within())).rejects.toThrow(
          'a path with a line break cannot be renamed',
        );
        // Still renaming after a failure.
        await t.stage([{ path: live, secret: Secret.generate() }], within());
        await channel.commit([live], within());
        expect(ls(path.dirname(m.real(live)))).toEqual(['web1_app']);
      } finally {
        channel.close();
        life.abort();
      }
    });

    it('relays a TCP connection from the machine: bytes both ways; an armed commit renames when the login passes and not when it is refused; a commit starts its reload after the rename', async () => {
      const m = machine();
      const t = m.transport();
      const dir = m.freshDir();
      const [passes, refused] = [`${dir}/pass/web1_app`, `${dir}/fail/web1_app`];
      await t.stage(
        [passes, refused].map((p) => ({ path: p, secret: Secret.generate() })),
        within(),
      );
      const database = await fakeDatabase();
      const life = new AbortController();
      const channel = await t.openChannel!(life.signal);
      try {
        const relay = channel.relay!;
        const echo = await relay.openSocket('127.0.0.1', database.port, within());
        const bytes = Buffer.from([0, 1, 255, 10, 13, 0x40]);
        const back = new Promise<Buffer>((resolve) => echo.once('data', (d: Buffer) => resolve(d)));
        echo.write(bytes);
        expect(await back).toEqual(bytes);
        echo.destroy();

        const before = snapshotDir(m.real(`${dir}/fail`));
        const no = await relay.openSocket('127.0.0.1', database.port, within());
        no.on('error', () => undefined);
        const notMoved = no.arm([refused], []);
        no.write('fail');
        expect(await notMoved).toEqual({ moved: false, reason: 'the login did not pass' });
        expect(snapshotDir(m.real(`${dir}/fail`))).toEqual(before);
        no.destroy();

        const yes = await relay.openSocket('127.0.0.1', database.port, within());
        const moved = yes.arm([passes], []);
        yes.write('pass');
        expect(await moved).toMatchObject({ moved: true });
        expect(ls(m.real(`${dir}/pass`))).toEqual(['web1_app']);
        yes.destroy();

        // A reload reads the file after its rename (BATON_ROOT: the local machine's root, empty over ssh).
        await t.stage([{ path: passes, secret: Secret.generate() }], within());
        const staged = readFileSync(m.real(`${passes}.next`), 'utf8');
        const done = await relay.commitThen(
          [passes],
          [{ command: 'cat "$BATON_ROOT$FILE" >&2; exit 3', env: { FILE: passes }, timeoutMs: 10_000 }],
          within(),
        );
        expect(await done.reloads[0]).toMatchObject({ exitCode: 3, timedOut: false, stderrTail: staged });
        await channel.whenIdle!();
      } finally {
        channel.close();
        life.abort();
        database.close();
      }
    });
  });

  describe('the reload runner', () => {
    it('runs a command with its environment, in its own time: the exit code and the end of stderr come back; past its time it is stopped there', async () => {
      const t = machine().transport();
      expect(
        await t.runCommand!(
          { command: 'echo "$WHO" >&2; exit 7', env: { WHO: 'web1 app' }, timeoutMs: 5_000 },
          within(),
        ),
      ).toMatchObject({ exitCode: 7, timedOut: false, stderrTail: 'web1 app' });
      const slow = await t.runCommand!({ command: 'sleep 30', env: {}, timeoutMs: 1_000 }, within());
      // Killed there (TERM to its process group): no exit code of its own.
      expect(slow).toMatchObject({ exitCode: undefined, timedOut: true });
      expect(slow.durationMs).toBeLessThan(10_000);
    });
  });
}
