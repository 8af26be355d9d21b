import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  installAuthority,
  interruptedOf,
  mintAuthority,
  readAuthorityFiles,
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
  setAsideAuthority,
  snapshotLocalAuthority,
  withAuthorityLock,
  type LocalAuthority,
  type StepHook,
} from '../../src/authority/index.js';
import { parseCertificate } from '../../src/pki/inspect-pair.js';
import { decide } from '../../src/share/decide.js';
import { confirmationPrefix, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { fingerprintOfFiles, fixedClock } from '../helpers/authority.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import {
  authorityDir,
  ca,
  cleanupAll,
  DEP,
  emptyStateDir,
  expectBlocked,
  expectEveryWriterRefuses,
  expectWhole,
  privateKeysBelow,
} from './support.js';

afterEach(cleanupAll);

const here = path.dirname(fileURLToPath(import.meta.url));

class Stop extends Error {}

/** A hook that stops the operation right after `target`, recording every step it saw. */
function stopAfter(target: string, seen: string[]): StepHook {
  return (step) => {
    seen.push(step);
    if (step === target) throw new Stop(step);
  };
}

async function crashAt<T>(target: string, run: (hook: StepHook) => Promise<T>): Promise<string[]> {
  const seen: string[] = [];
  await expect(run(stopAfter(target, seen))).rejects.toBeInstanceOf(Stop);
  expect(seen.at(-1)).toBe(target);
  return seen;
}

/** The locked reader and the unlocked snapshot reader must give the same answer. */
async function bothReaders(stateDir: string): Promise<LocalAuthority> {
  const locked = await readLocalAuthority(stateDir, DEP);
  const unlocked = await snapshotLocalAuthority(stateDir, DEP);
  expect(JSON.stringify(unlocked)).toBe(JSON.stringify(locked));
  return locked;
}

function expectKeysKept(before: Set<string>, dir: string): void {
  const after = privateKeysBelow(dir);
  for (const key of before) expect(after.has(key), 'a private key was lost').toBe(true);
}

function newCertFingerprint(stateDir: string): Fingerprint | undefined {
  try {
    return parseCertificate(readFileSync(ca(stateDir, 'ca.crt.new')))?.fingerprint;
  } catch {
    return undefined;
  }
}

const ROTATE_STEPS = [
  'wrote ca.key.new',
  'wrote ca.crt.new',
  'wrote ca-previous.key',
  'wrote ca-previous.crt',
  'renamed ca.key.new',
  'renamed ca.crt.new',
];

describe('rotate, stopped after each durable step', () => {
  it('takes the steps of docs/authority-on-disk.md in order', async () => {
    const { stateDir } = await authorityDir();
    const seen: string[] = [];
    await rotateAuthority(stateDir, DEP, { onStep: (s) => void seen.push(s) });
    expect(seen).toEqual(ROTATE_STEPS);
  });

  it.each(ROTATE_STEPS.slice(0, -1).map((s, i) => [s, i] as const))(
    'after "%s" the reader answers the old authority, nothing is published, no key is lost, and rotating again finishes it',
    async (step, index) => {
      const { stateDir, fingerprint: old } = await authorityDir();
      const keysBefore = privateKeysBelow(stateDir);
      await crashAt(step, (onStep) => rotateAuthority(stateDir, DEP, { onStep, clock: fixedClock() }));

      const local = expectWhole(await bothReaders(stateDir));
      expect(local.current.fingerprint).toBe(old);
      expect(local.previous).toBeUndefined();
      expect(local.pending).toBe('rotate');
      expect(local.repairedTear).toBe(step === 'renamed ca.key.new');
      expect(local.unexpected).toEqual([]);
      expectKeysKept(keysBefore, stateDir);
      await expect(withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP))).rejects.toThrow(
        'Finish it with `baton ca rotate`',
      );
      await expect(retireAuthority(stateDir, DEP)).rejects.toThrow(
        'Finish the rotation with `baton ca rotate` first.',
      );

      const aside = newCertFingerprint(stateDir);
      const result = await rotateAuthority(stateDir, DEP);
      expect(result).toMatchObject({ previous: old, resumed: true });
      // Once the aside pair is whole (from the second step on) the rotation finishes WITH it.
      if (index >= 1) expect(result.current).toBe(aside);
      const done = expectWhole(await bothReaders(stateDir));
      expect(done).toMatchObject({ repairedTear: false, markerMissing: false });
      expect(done.pending).toBeUndefined();
      expect(done.current.fingerprint).toBe(result.current);
      expect(done.current.replaces).toBe(old);
      expect(done.previous?.fingerprint).toBe(old);
      expectKeysKept(keysBefore, stateDir);
    },
  );

  it.each(ROTATE_STEPS.slice(0, -1))(
    'a rotation stopped after "%s" and stopped AGAIN while finishing still reads right and finishes on the next try',
    async (step) => {
      const { stateDir, fingerprint: old } = await authorityDir();
      const keysBefore = privateKeysBelow(stateDir);
      await crashAt(step, (onStep) => rotateAuthority(stateDir, DEP, { onStep }));
      const secondSteps: string[] = [];
      await expect(
        rotateAuthority(stateDir, DEP, {
          onStep: (s) => {
            secondSteps.push(s);
            throw new Stop(s);
          },
        }),
      ).rejects.toBeInstanceOf(Stop);
      expect(secondSteps).toHaveLength(1);
      const between = expectWhole(await bothReaders(stateDir));
      expectKeysKept(keysBefore, stateDir);
      if (secondSteps[0] === 'renamed ca.crt.new') {
        // The step it stopped after was the last one: the rotation is complete.
        expect(between.previous?.fingerprint).toBe(old);
      } else {
        expect(between).toMatchObject({ current: { fingerprint: old }, pending: 'rotate' });
        expect((await rotateAuthority(stateDir, DEP)).previous).toBe(old);
      }
      expect(expectWhole(await bothReaders(stateDir))).toMatchObject({
        previous: { fingerprint: old },
        current: { replaces: old },
      });
      expectKeysKept(keysBefore, stateDir);
    },
  );

  it('after the last rename the overlap is in place: new current, old previous', async () => {
    const { stateDir, fingerprint: old } = await authorityDir();
    await crashAt('renamed ca.crt.new', (onStep) => rotateAuthority(stateDir, DEP, { onStep }));
    const local = expectWhole(await bothReaders(stateDir));
    expect(local.previous?.fingerprint).toBe(old);
    expect(local.current.replaces).toBe(old);
    expect(local.pending).toBeUndefined();
  });

  it('a SIGKILLed rotation between the key and certificate renames leaves the tear, which reads as the old authority', async () => {
    const { stateDir, fingerprint: old } = await authorityDir();
    const keysBefore = privateKeysBelow(stateDir);
    const code = await runChild('rotate', stateDir, 'renamed ca.key.new');
    expect(code).toBe('SIGKILL');
    const local = expectWhole(await bothReaders(stateDir));
    expect(local).toMatchObject({ repairedTear: true, pending: 'rotate' });
    expect(local.current.fingerprint).toBe(old);
    expectKeysKept(keysBefore, stateDir);
    // The kernel released the dead rotation's lock: finishing it needs no manual step.
    const result = await rotateAuthority(stateDir, DEP);
    expect(result).toMatchObject({ previous: old, resumed: true });
  });
});

describe('mint (fresh install), stopped after each durable step', () => {
  it('marker first, then key, then certificate — each intermediate state reads right (never fresh again) and the key is never lost', async () => {
    const files = await mintAuthority(DEP);
    const fp = await fingerprintOfFiles(files);
    const expectations: Record<string, (l: LocalAuthority) => void> = {
      // The marker first: billet's LoadOrCreateCA reads an empty ca/ WITH it as lost, not day one.
      'installed authority-created': (l) => expect(l.state).toBe('lost'),
      'installed ca.key': (l) =>
        expect(expectBlocked(l, 'half-initialised').error.what).toContain(
          'ca/ca.key is present but ca/ca.crt is missing',
        ),
      'installed ca.crt': (l) =>
        expect(expectWhole(l)).toMatchObject({ markerMissing: false, current: { fingerprint: fp } }),
    };
    for (const [step, check] of Object.entries(expectations)) {
      const stateDir = await emptyStateDir();
      const seen = await crashAt(step, (onStep) =>
        withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fp, { onStep })),
      );
      expect(seen).toEqual(Object.keys(expectations).slice(0, seen.length));
      check(await bothReaders(stateDir));
      if (step !== 'installed authority-created')
        expect(readFileSync(ca(stateDir, 'ca.key'))).toEqual(Buffer.from(files['ca.key']!));
    }
  });

  it('a SIGKILLed mint after the key leaves half an authority that every writer refuses, the key kept', async () => {
    const stateDir = await emptyStateDir();
    expect(await runChild('mint', stateDir, 'installed ca.key')).toBe('SIGKILL');
    expectBlocked(await bothReaders(stateDir), 'half-initialised');
    expect(privateKeysBelow(stateDir).size).toBe(1);
    await expectEveryWriterRefuses(stateDir, ['ca/ca.crt is missing']);
    expect(privateKeysBelow(stateDir).size).toBe(1);
  });
});

describe('install (adopt into a lost host, with an overlap), stopped after each durable step', () => {
  it('the previous pair first (its key before its certificate), then key, then certificate — every intermediate state is refused until the certificate lands', async () => {
    const source = await authorityDir({ rotated: true });
    const files = await withAuthorityLock(source.stateDir, () => readAuthorityFiles(source.stateDir, DEP));
    const steps = [
      'installed ca-previous.key',
      'installed ca-previous.crt',
      'installed ca.key',
      'installed ca.crt',
    ];
    for (const step of steps) {
      const { stateDir } = await authorityDir();
      rmSync(path.join(stateDir, 'ca'), { recursive: true }); // lost: the marker stays
      await crashAt(step, (onStep) =>
        withAuthorityLock(stateDir, () =>
          installAuthority(stateDir, DEP, files, source.fingerprint, { onStep }),
        ),
      );
      const local = await bothReaders(stateDir);
      if (step === 'installed ca.crt') {
        expect(expectWhole(local)).toMatchObject({
          current: { fingerprint: source.fingerprint },
          previous: { fingerprint: source.previous },
        });
      } else {
        expectBlocked(local, 'half-initialised');
      }
      // Every key written so far is on disk, byte for byte.
      for (const name of ['ca-previous.key', 'ca.key'] as const) {
        if (steps.indexOf(`installed ${name}`) <= steps.indexOf(step)) {
          expect(readFileSync(ca(stateDir, name))).toEqual(Buffer.from(files[name]!));
        }
      }
    }
  });
});

describe("retire, stopped after each durable step (billet b2b42c1a's order: the key first)", () => {
  it('after the key is removed, the certificate left without it is never "whole ✓": an interrupted retire billet cannot start on, finished by retiring again (no key is left to confirm)', async () => {
    const { stateDir, fingerprint, previous } = await authorityDir({ rotated: true });
    await crashAt('removed ca-previous.key', (onStep) =>
      retireAuthority(stateDir, DEP, { onStep, confirm: confirmationPrefix(previous!) }),
    );
    const local = expectWhole(await bothReaders(stateDir));
    expect(local).toMatchObject({
      pending: 'retire',
      leftover: { file: 'ca-previous.crt', fingerprint: previous },
    });
    expect(interruptedOf(local)).toMatchObject({ op: 'retire', billetStops: true });
    // Not "whole ✓ in sync, nothing to do": the verdict is blocked and names the finishing step.
    const verdict = decide(local, { state: 'none', location: 'file:///store' });
    expect(verdict).toMatchObject({ kind: 'blocked', step: { args: ['ca', 'retire'] } });
    expect((verdict as { why: string }).why).toContain("billet's control plane will not start");
    expect(await retireAuthority(stateDir, DEP)).toEqual({
      kind: 'finished',
      current: fingerprint,
      removed: 'ca-previous.crt',
    });
    expect(interruptedOf(await bothReaders(stateDir))).toBeUndefined();
  });

  it('after the certificate is removed too the overlap is over', async () => {
    const { stateDir, fingerprint, previous } = await authorityDir({ rotated: true });
    await crashAt('removed ca-previous.crt', (onStep) =>
      retireAuthority(stateDir, DEP, { onStep, confirm: confirmationPrefix(previous!) }),
    );
    expect(expectWhole(await bothReaders(stateDir))).toMatchObject({
      current: { fingerprint },
      previous: undefined,
    });
  });

  it('a key left without its certificate (the order of an older baton) names a retire to finish, and retiring again deletes the key only when confirmed', async () => {
    const { stateDir, fingerprint, previous } = await authorityDir({ rotated: true });
    const confirm = confirmationPrefix(previous!);
    const currentKey = readFileSync(ca(stateDir, 'ca.key'));
    rmSync(ca(stateDir, 'ca-previous.crt'));
    const local = expectWhole(await bothReaders(stateDir));
    expect(local).toMatchObject({
      current: { fingerprint },
      previous: undefined,
      pending: 'retire',
      leftover: { file: 'ca-previous.key', fingerprint: previous },
    });
    await expect(withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP))).rejects.toThrow(
      'Finish it with `baton ca retire`',
    );
    await expect(rotateAuthority(stateDir, DEP)).rejects.toThrow(
      'Finish it with `baton ca retire --confirm <PREVIOUS 8>`, then rotate.',
    );
    const unconfirmed = await batonErrorOf(retireAuthority(stateDir, DEP));
    expect(unconfirmed.code).toBe('usage');
    expect(existsSync(ca(stateDir, 'ca-previous.key'))).toBe(true);
    expect(await retireAuthority(stateDir, DEP, { confirm })).toEqual({
      kind: 'finished',
      current: fingerprint,
      removed: 'ca-previous.key',
    });
    const done = expectWhole(await bothReaders(stateDir));
    expect(done.pending).toBeUndefined();
    expect(done.previous).toBeUndefined();
    expect(readFileSync(ca(stateDir, 'ca.key'))).toEqual(currentKey);
  });
});

describe('an OS failure part-way through rotate or retire', () => {
  /** What a full disk looks like to the code: an errno error from a named call. */
  const diskFull = (file: string) =>
    Object.assign(new Error(`ENOSPC: no space left on device, write '${file}'`), {
      code: 'ENOSPC',
      syscall: 'write',
      path: file,
    });

  it('is a "failed" error naming the call, the file and its code, and the command that finishes it; no key is lost', async () => {
    const { stateDir, fingerprint: old } = await authorityDir();
    const keysBefore = privateKeysBelow(stateDir);
    const rotating = await batonErrorOf(
      rotateAuthority(stateDir, DEP, {
        onStep: (s) => {
          if (s === 'wrote ca.crt.new') throw diskFull(ca(stateDir, 'ca-previous.crt'));
        },
      }),
    );
    expect(rotating.code).toBe('failed');
    expect(rotating.what).toBe(
      `The rotation stopped: write ${ca(stateDir, 'ca-previous.crt')} failed (ENOSPC).`,
    );
    expect(rotating.where).toBe(path.dirname(ca(stateDir, 'ca.key')));
    expect(rotating.next).toContain('run `baton ca rotate` again');
    expect(expectWhole(await bothReaders(stateDir)).current.fingerprint).toBe(old);
    expectKeysKept(keysBefore, stateDir);
    await rotateAuthority(stateDir, DEP);

    const retiring = await batonErrorOf(
      retireAuthority(stateDir, DEP, {
        confirm: confirmationPrefix(old),
        onStep: () => {
          throw diskFull(ca(stateDir, 'ca-previous.crt'));
        },
      }),
    );
    expect(retiring.code).toBe('failed');
    expect(retiring.what).toBe(
      `The retire stopped: write ${ca(stateDir, 'ca-previous.crt')} failed (ENOSPC).`,
    );
    expect(retiring.next).toContain('run `baton ca retire --confirm <PREVIOUS 8>` again');
    expect(retiring.changed).toBe('The current authority is untouched.');
  });
});

describe('set aside, stopped after each durable step', () => {
  it('the marker is copied aside and stays: after the copy the host reads as before, after ca/ is moved it reads lost (adopt is allowed, billet refuses to mint), and no key is ever deleted', async () => {
    for (const step of ['copied the marker aside', 'set aside ca/']) {
      const { stateDir } = await authorityDir({ rotated: true });
      const keysBefore = privateKeysBelow(stateDir);
      await crashAt(step, (onStep) =>
        withAuthorityLock(stateDir, () => setAsideAuthority(stateDir, fixedClock(), { onStep })),
      );
      expect((await bothReaders(stateDir)).state).toBe(step === 'set aside ca/' ? 'lost' : 'whole');
      expect(privateKeysBelow(stateDir)).toEqual(keysBefore);
    }
  });
});

/**
 * Runs an operation in a child process that SIGKILLs itself right after `step`: no finally
 * block, no flush, no lock release but the kernel's.
 */
async function runChild(
  op: 'rotate' | 'mint',
  stateDir: string,
  step: string,
): Promise<string | number | null> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(here, 'fixtures/kill-at-step.ts'), op, stateDir, DEP, step],
    {
      cwd: path.resolve(here, '../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  if (signal !== 'SIGKILL') throw new Error(`child exited ${code}: ${err}`);
  return signal;
}
