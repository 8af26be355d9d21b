/**
 * The agent's crash points, once, on this host: every operation that changes files is run as the
 * local transport runs it (`perl -e <loader> -- <core> --root <root> <mode> …`, the program on stdin,
 * the input on fd 3) under strace, which SIGKILLs the agent on entering its N-th call of one file-changing syscall
 * (`-e inject=<syscall>:signal=KILL:when=N`; that call is not made). N steps through every such
 * call strace counted in a run to completion, so each state between two steps is a crash state.
 * No hook in the agent: what is killed is the program a holder runs. After each kill the next
 * baton command (the local transport) must read the machine dir correctly: a live file is the
 * old one or the new one, whole; a staged temp left is removed by unstage; a lock is free.
 * Each operation prints one line: its crash points and the distinct states they left.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { afterAll, expect, it } from 'vitest';
import { secretDigest } from '../../src/mesh/digest.js';
import { agentInput, agentPerlArgs } from '../../src/transport/remote-scripts.js';
import { localTransport } from '../../src/transport/local-transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';

/** The syscalls by which the agent changes files (perl calls these by name on Linux). */
const CHANGING = ['mkdir', 'write', 'rename', 'link', 'unlink', 'chmod', 'flock'] as const;

const strace = (() => {
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir !== '' && existsSync(path.join(dir, 'strace'))) return undefined;
  return 'strace is not installed (apt-get install strace; .ci/run installs it)';
})();

const tmp = makeTempDir('baton-crash-');
afterAll(() => tmp.cleanup());
const root = path.join(tmp.dir, 'db1');
mkdirSync(root);
const machine = localTransport('db1', root);
const within = () => AbortSignal.timeout(30_000);
let dirs = 0;

interface Run {
  /** Killed by the injected SIGKILL (not run to its end). */
  readonly killed: boolean;
  /** How many times it entered each changing syscall (from strace's trace). */
  readonly calls: Readonly<Record<string, number>>;
}

/** One run of the agent as the local transport starts it, under strace; `kill`: which call to die on. */
function runAgent(
  args: readonly string[],
  input: string,
  kill?: { syscall: string; n: number },
): Promise<Run> {
  const trace = path.join(tmp.dir, `trace-${++dirs}`);
  const set = kill ? kill.syscall : CHANGING.join(',');
  const child = spawn(
    'strace',
    [
      '-qq',
      '-o',
      trace,
      '-e',
      `trace=${set}`,
      ...(kill ? ['-e', `inject=${kill.syscall}:signal=KILL:when=${kill.n}`] : []),
      'perl',
      ...agentPerlArgs(['--root', root, ...args]),
    ],
    { stdio: ['pipe', 'ignore', 'ignore', 'pipe'] },
  );
  child.stdin!.end(agentInput());
  const fd3 = child.stdio[3] as Writable;
  fd3.on('error', () => undefined);
  fd3.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const calls: Record<string, number> = {};
      for (const line of readFileSync(trace, 'utf8').split('\n')) {
        const name = /^(\w+)\(/.exec(line)?.[1];
        if (name) calls[name] = (calls[name] ?? 0) + 1;
      }
      rmSync(trace);
      // strace ends as its tracee did: killed by the same signal.
      resolve({ killed: signal === 'SIGKILL' || code === 128 + 9, calls });
    });
  });
}

/** What a crash left, with the dead agent's pid taken out of temp names: equal states compare equal. */
const stateOf = (dir: string) =>
  JSON.stringify(
    Object.entries(snapshotDir(dir)).map(([name, what]) => [name.replace(/\.tmp\.\d+$/, '.tmp.PID'), what]),
  );

interface Scenario {
  /** Lays out the machine dir `dir` (a machine path) before the operation. */
  setup(dir: string): void;
  /** The agent's mode and arguments, and its fd 3. */
  run(dir: string): { args: string[]; input: string };
  /** After a kill (or a run to the end): the next baton command reads `dir` correctly. */
  check(dir: string): Promise<void>;
}

const real = (p: string) => path.join(root, p);
const put = (p: string, text: string) => {
  mkdirSync(path.dirname(real(p)), { recursive: true, mode: 0o700 });
  writeFileSync(real(p), text, { mode: 0o600 });
};
const textOf = (p: string) => (existsSync(real(p)) ? readFileSync(real(p), 'utf8') : undefined);
const digestOf = (text: string | undefined) => (text === undefined ? undefined : secretDigest(text));
const ls = (p: string) => readdirSync(real(p)).sort();

/** Steps a scenario through every crash point; returns how many points and distinct states. */
async function crashPoints(
  scenario: Scenario,
  modes = CHANGING,
): Promise<{ points: number; states: number }> {
  const clean = `/m-${++dirs}`;
  scenario.setup(clean);
  const whole = await runAgent(scenario.run(clean).args, scenario.run(clean).input);
  expect(whole.killed).toBe(false);
  await scenario.check(clean);
  const states = new Set<string>();
  let points = 0;
  for (const syscall of modes)
    for (let n = 1; n <= (whole.calls[syscall] ?? 0); n++) {
      const dir = `/m-${++dirs}`;
      scenario.setup(dir);
      const { args, input } = scenario.run(dir);
      const run = await runAgent(args, input, { syscall, n });
      expect(run.killed, `${syscall} #${n}`).toBe(true);
      points++;
      states.add(stateOf(real(dir)));
      await scenario.check(dir);
    }
  return { points, states: states.size };
}

const report = (operation: string, result: { points: number; states: number }) =>
  console.log(JSON.stringify({ operation, crashPoints: result.points, states: result.states }));

describeWithPart(strace, "the agent's crash points (SIGKILL at every file-changing step)", () => {
  it('stage: a live file keeps its old secret; a staged file is whole or absent; unstage removes what a cut-short stage left', async () => {
    const result = await crashPoints({
      setup: (dir) => put(`${dir}/a`, 'old'),
      run: (dir) => ({ args: ['files', 'stage', `${dir}/a`, `${dir}/new/b`], input: 'new-a\nnew-b\n' }),
      check: async (dir) => {
        const read = await machine.digests([`${dir}/a`, `${dir}/new/b`], within());
        expect(read.map((d) => d.live)).toEqual([secretDigest('old'), undefined]);
        expect([undefined, secretDigest('new-a')]).toContainEqual(read[0]!.next);
        expect([undefined, secretDigest('new-b')]).toContainEqual(read[1]!.next);
        await machine.unstage([`${dir}/a`, `${dir}/new/b`], within());
        expect(ls(dir).filter((n) => n !== 'new')).toEqual(['a']);
        if (existsSync(real(`${dir}/new`))) expect(ls(`${dir}/new`)).toEqual([]);
        expect(textOf(`${dir}/a`)).toBe('old');
      },
    });
    report('stage', result);
    expect(result.points).toBeGreaterThanOrEqual(6);
  });

  const committing = (mode: 'files' | 'channel'): Scenario => ({
    setup: (dir) => {
      for (const n of ['a', 'b']) {
        put(`${dir}/${n}`, `old-${n}`);
        put(`${dir}/${n}.next`, `new-${n}`);
      }
    },
    run: (dir) =>
      mode === 'files'
        ? { args: ['files', 'commit', `${dir}/a`, `${dir}/b`], input: '' }
        : { args: ['channel'], input: `c 2\n${dir}/a\n${dir}/b\n` },
    check: async (dir) => {
      const read = await machine.digests([`${dir}/a`, `${dir}/b`], within());
      const still: string[] = [];
      for (const [i, n] of ['a', 'b'].entries()) {
        // Old and still staged, or new and nothing staged: never partial, never neither.
        const pair = [read[i]!.live, read[i]!.next];
        expect([
          [secretDigest(`old-${n}`), secretDigest(`new-${n}`)],
          [secretDigest(`new-${n}`), undefined],
        ]).toContainEqual(pair);
        if (pair[1] !== undefined) still.push(`${dir}/${n}`);
      }
      // The commit a resume makes of what is still staged.
      await machine.commit(still, within());
      expect([textOf(`${dir}/a`), textOf(`${dir}/b`)]).toEqual(['new-a', 'new-b']);
      expect(ls(dir)).toEqual(['a', 'b']);
    },
  });

  it('commit: each live file is the old or the new, whole, the old one still staged; the commit of what is staged finishes it', async () => {
    const result = await crashPoints(committing('files'));
    report('commit', result);
    expect(result.points).toBeGreaterThanOrEqual(2);
  });

  it("the rename channel's commit: the same", async () => {
    const result = await crashPoints(committing('channel'));
    report('channel commit', result);
    expect(result.points).toBeGreaterThanOrEqual(2);
  });

  it('unstage: the live file is untouched; unstage again removes the rest', async () => {
    const result = await crashPoints({
      setup: (dir) => {
        put(`${dir}/a`, 'old');
        put(`${dir}/a.next`, 'new');
        put(`${dir}/a.next.tmp.4242`, 'ne');
      },
      run: (dir) => ({ args: ['files', 'unstage', `${dir}/a`], input: '' }),
      check: async (dir) => {
        expect(textOf(`${dir}/a`)).toBe('old');
        await machine.unstage([`${dir}/a`], within());
        expect(ls(dir)).toEqual(['a']);
      },
    });
    report('unstage', result);
    expect(result.points).toBeGreaterThanOrEqual(2);
  });

  it('keep: the live file is untouched; the kept file is absent or the live one itself; keep again keeps it', async () => {
    const result = await crashPoints({
      setup: (dir) => {
        put(`${dir}/a`, 'old');
        put(`${dir}/a.next`, 'new');
      },
      run: (dir) => ({ args: ['files', 'keep', `${dir}/a`], input: '' }),
      check: async (dir) => {
        const [read] = await machine.digests([`${dir}/a`], within());
        expect(read!.live).toBe(secretDigest('old'));
        expect([undefined, secretDigest('old')]).toContainEqual(read!.prev);
        expect(await machine.keepPrevious([`${dir}/a`], within())).toEqual([secretDigest('old')]);
        const inode = (p: string): Stats => statSync(real(p));
        expect(inode(`${dir}/.a.prev`).ino).toBe(inode(`${dir}/a`).ino);
        // The pair finished: nothing of the keep left, its cut-short temp included.
        await machine.discardPrevious([`${dir}/a`], within());
        expect(ls(dir)).toEqual(['a', 'a.next']);
      },
    });
    report('keep', result);
    expect(result.points).toBeGreaterThanOrEqual(2);
  });

  it('restore: the live file is the new or the old, whole, never missing; while it is the new the kept file is still there, and restore again finishes; a receipt left never confirms the old', async () => {
    const result = await crashPoints({
      setup: (dir) => {
        put(`${dir}/a`, 'new');
        put(`${dir}/.a.prev`, 'old');
        put(`${dir}/.applied/a`, `a ${secretDigest('new')}`);
      },
      run: (dir) => ({ args: ['files', 'restore', `${dir}/a`], input: '' }),
      check: async (dir) => {
        const live = textOf(`${dir}/a`);
        expect(['new', 'old']).toContain(live);
        if (live === 'new') expect(textOf(`${dir}/.a.prev`)).toBe('old');
        await machine.restorePrevious([`${dir}/a`], within());
        expect(textOf(`${dir}/a`)).toBe('old');
        expect([undefined, 'new']).toContain(textOf(`${dir}/.a.rolled-back`));
        const receipt = textOf(`${dir}/.applied/a`);
        if (receipt !== undefined) expect(receipt).not.toContain(digestOf('old'));
        await machine.discardPrevious([`${dir}/a`], within());
        expect(ls(dir)).toEqual(['.applied', 'a']);
      },
    });
    report('restore', result);
    expect(result.points).toBeGreaterThanOrEqual(4);
  });

  it('retire: what it removed is gone, the rest is still there; retire again finishes, leaving what is not the pair', async () => {
    const result = await crashPoints({
      setup: (dir) => {
        for (const f of ['a', 'a.next', '.a.prev', '.a.rolled-back', '.applied/a', 'a+a'])
          put(`${dir}/${f}`, 'x');
      },
      run: (dir) => ({ args: ['files', 'retire', `${dir}/a`], input: '' }),
      check: async (dir) => {
        expect(textOf(`${dir}/a+a`)).toBe('x');
        await machine.retire([`${dir}/a`], within());
        expect(ls(dir)).toEqual(['.applied', 'a+a']);
      },
    });
    report('retire', result);
    expect(result.points).toBeGreaterThanOrEqual(5);
  });

  it('records: a record is the old one or the new one, whole; the next record write leaves no temp a kill left', async () => {
    const record = (dir: string) => `${dir}/provides/pg-main/.web1_app.rotation`;
    const result = await crashPoints({
      setup: (dir) => put(record(dir), '{"phase":"preparing"}\n'),
      run: (dir) => ({
        args: ['files', 'records', record(dir), `${dir}/consumes/pg-main/.web1_app.rotation`],
        input: '{"phase":"committing"}\n{"phase":"preparing"}\n',
      }),
      check: async (dir) => {
        expect(['{"phase":"preparing"}\n', '{"phase":"committing"}\n']).toContain(textOf(record(dir)));
        await machine.writeRecords([{ path: record(dir), text: '{"phase":"finished"}' }], within());
        expect(textOf(record(dir))).toBe('{"phase":"finished"}\n');
        expect(ls(`${dir}/provides/pg-main`)).toEqual(['.web1_app.rotation']);
      },
    });
    report('records', result);
    expect(result.points).toBeGreaterThanOrEqual(3);
  });

  it('records then stage, one request: the staged file never exists without the new intent; unstage removes what a kill left', async () => {
    const record = (dir: string) => `${dir}/provides/pg-main/.web1_app.rotation`;
    const live = (dir: string) => `${dir}/provides/pg-main/web1_app`;
    const result = await crashPoints({
      setup: (dir) => (put(record(dir), '{"phase":"finished"}\n'), put(live(dir), 'old')),
      run: (dir) => ({
        args: ['files', 'records:1+stage', record(dir), live(dir)],
        input: '{"phase":"preparing"}\nnew\n',
      }),
      check: async (dir) => {
        const intent = textOf(record(dir));
        expect(['{"phase":"finished"}\n', '{"phase":"preparing"}\n']).toContain(intent);
        // Intent before action: a staged file (or a temp of one) only under the new intent.
        if (ls(`${dir}/provides/pg-main`).some((f) => f.startsWith('web1_app.next')))
          expect(intent).toBe('{"phase":"preparing"}\n');
        expect(textOf(live(dir))).toBe('old');
        await machine.unstage([live(dir)], within());
        await machine.writeRecords([{ path: record(dir), text: '{"phase":"rolled-back"}' }], within());
        expect(ls(`${dir}/provides/pg-main`)).toEqual(['.web1_app.rotation', 'web1_app']);
      },
    });
    report('records:1+stage', result);
    expect(result.points).toBeGreaterThanOrEqual(5);
  });

  it('records then keep and commit, one request: the live file is the old or the new one, the new one only under `committing` with the old kept; a roll-back at any point leaves the old one and nothing beside it', async () => {
    const record = (dir: string) => `${dir}/provides/pg-main/.web1_app.rotation`;
    const live = (dir: string) => `${dir}/provides/pg-main/web1_app`;
    const result = await crashPoints({
      setup: (dir) => (
        put(record(dir), '{"phase":"prepared"}\n'),
        put(live(dir), 'old'),
        put(`${live(dir)}.next`, 'new')
      ),
      run: (dir) => ({
        args: ['files', 'records:1+keep+commit', record(dir), live(dir)],
        input: '{"phase":"committing"}\n',
      }),
      check: async (dir) => {
        const intent = textOf(record(dir));
        expect(['{"phase":"prepared"}\n', '{"phase":"committing"}\n']).toContain(intent);
        const now = textOf(live(dir));
        expect(['old', 'new']).toContain(now);
        const kept = textOf(`${dir}/provides/pg-main/.web1_app.prev`);
        if (kept !== undefined || now === 'new') expect(intent).toBe('{"phase":"committing"}\n');
        if (now === 'new') expect(kept).toBe('old');
        // The roll-back's two ways (rollback.ts): the new file live is restored, a staged one removed.
        if (now === 'new') expect(await machine.restorePrevious([live(dir)], within())).toEqual([true]);
        else await machine.unstage([live(dir)], within());
        await machine.discardPrevious([live(dir)], within());
        await machine.writeRecords([{ path: record(dir), text: '{"phase":"rolled-back"}' }], within());
        expect(textOf(live(dir))).toBe('old');
        expect(ls(`${dir}/provides/pg-main`)).toEqual(['.web1_app.rotation', 'web1_app']);
      },
    });
    report('records:1+keep+commit', result);
    expect(result.points).toBeGreaterThanOrEqual(5);
  });

  it('the provider lock: a holder killed at any step leaves the lock free; words it left are stale (named by nobody); the next holder takes it and leaves none', async () => {
    const result = await crashPoints({
      setup: (dir) => mkdirSync(real(`${dir}/provides/pg-main`), { recursive: true }),
      // fd 3 ends at once: the agent takes the lock, says so, and lets go — every step it has.
      run: (dir) => ({ args: ['lock', `${dir}/provides/pg-main`, '{"command":"killed"}'], input: '' }),
      check: async (dir) => {
        const provider = `${dir}/provides/pg-main`;
        expect((await machine.digests([`${provider}/web1_app`], within()))[0]?.lockedBy).toBeUndefined();
        const next = await machine.lock(provider, '{"command":"next"}', within());
        expect(next.taken).toBe(true);
        if (next.taken) await next.release();
        // Nothing of either holder left: the words, or a temp of them a kill cut short.
        expect(ls(provider)).toEqual([]);
      },
    });
    report('lock', result);
    expect(result.points).toBeGreaterThanOrEqual(4);
  });
});
