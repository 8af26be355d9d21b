import { readFileSync, rmSync, unlinkSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  installAuthority,
  mintAuthority,
  readAuthorityFiles,
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
  setAsideAuthority,
  withAuthorityLock,
} from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import { fingerprintOfFiles, fixedClock } from '../helpers/authority.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import {
  authorityDir,
  ca,
  cleanupAll,
  copy,
  DEP,
  emptyStateDir,
  expectBlocked,
  expectWhole,
  privateKeysBelow,
} from './support.js';

afterEach(cleanupAll);

async function refusedUnchanged(
  stateDir: string,
  run: () => Promise<unknown>,
  ...mentions: string[]
): Promise<BatonError> {
  const before = snapshotDir(stateDir);
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BatonError);
  expect((error as BatonError).code, (error as Error).message).toBe('refused');
  for (const m of mentions) expect((error as BatonError).message).toContain(m);
  expect((error as BatonError).changed).toBe('Nothing was written.');
  expect(snapshotDir(stateDir)).toEqual(before);
  return error as BatonError;
}

describe('rotate', () => {
  it('mints a successor that names the old authority, keeps the old pair as ca-previous.* byte for byte, with the right modes', async () => {
    const { stateDir, fingerprint: old } = await authorityDir();
    const oldKey = readFileSync(ca(stateDir, 'ca.key'));
    const oldCert = readFileSync(ca(stateDir, 'ca.crt'));
    const result = await rotateAuthority(stateDir, DEP, { clock: fixedClock() });
    expect(result).toMatchObject({ previous: old, resumed: false });
    expect(result.current).not.toBe(old);
    expect(readFileSync(ca(stateDir, 'ca-previous.key'))).toEqual(oldKey);
    expect(readFileSync(ca(stateDir, 'ca-previous.crt'))).toEqual(oldCert);
    const snap = snapshotDir(stateDir);
    expect(
      Object.keys(snap)
        .filter((k) => k.startsWith('ca/'))
        .sort(),
    ).toEqual(['ca/ca-previous.crt', 'ca/ca-previous.key', 'ca/ca.crt', 'ca/ca.key']);
    expect(snap['ca/ca.key']).toMatch(/^file 600 /);
    expect(snap['ca/ca-previous.key']).toMatch(/^file 600 /);
    expect(snap['ca/ca.crt']).toMatch(/^file 644 /);
    expect(snap['ca/ca-previous.crt']).toMatch(/^file 644 /);
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.current).toMatchObject({ fingerprint: result.current, replaces: old });
  });

  it('refuses while an overlap is in progress, saying to retire first, and changes nothing', async () => {
    const { stateDir, previous } = await authorityDir({ rotated: true });
    await refusedUnchanged(
      stateDir,
      () => rotateAuthority(stateDir, DEP),
      `A rotation overlap is already in progress: ${previous}`,
      '`baton ca retire --confirm <PREVIOUS 8>`',
    );
  });

  it('refuses on a fresh host and on a lost one, saying what to do, and changes nothing', async () => {
    const fresh = await emptyStateDir();
    await refusedUnchanged(
      fresh,
      () => rotateAuthority(fresh, DEP),
      'this host holds none (fresh)',
      '`baton ca init`',
    );
    const { stateDir: lost } = await authorityDir();
    rmSync(path.join(lost, 'ca'), { recursive: true });
    await refusedUnchanged(
      lost,
      () => rotateAuthority(lost, DEP),
      'this host holds none (lost)',
      '`baton sync`',
    );
  });

  it('writes back a missing marker (a locked operation backfills it)', async () => {
    const { stateDir } = await authorityDir();
    unlinkSync(path.join(stateDir, 'authority-created'));
    await rotateAuthority(stateDir, DEP);
    expect(readFileSync(path.join(stateDir, 'authority-created'), 'utf8')).toBe(`${DEP}\n`);
  });

  it('a second rotation while one holds the lock is refused with lock-busy', async () => {
    const { stateDir } = await authorityDir();
    await withAuthorityLock(stateDir, async () => {
      const error = await rotateAuthority(stateDir, DEP).catch((e: unknown) => e);
      expect((error as BatonError).code).toBe('lock-busy');
    });
  });
});

describe('the retire guard', () => {
  it('retires a provable predecessor: ca-previous.* are removed and the current pair is untouched', async () => {
    const { stateDir, fingerprint, previous } = await authorityDir({ rotated: true });
    const current = snapshotDir(stateDir);
    // Bound to the data: without the previous fingerprint's 8 characters nothing is deleted.
    const unconfirmed = await retireAuthority(stateDir, DEP).catch((e: unknown) => e);
    expect(unconfirmed).toMatchObject({ code: 'usage' });
    expect((unconfirmed as BatonError).what).toContain('No --confirm was given.');
    expect(snapshotDir(stateDir)).toEqual(current);
    expect(await retireAuthority(stateDir, DEP, { confirm: confirmationPrefix(previous!) })).toEqual({
      kind: 'retired',
      previous,
      current: fingerprint,
    });
    const after = snapshotDir(stateDir);
    expect(after['ca/ca-previous.key']).toBeUndefined();
    expect(after['ca/ca-previous.crt']).toBeUndefined();
    expect(after['ca/ca.key']).toBe(current['ca/ca.key']);
    expect(after['ca/ca.crt']).toBe(current['ca/ca.crt']);
    expect(expectWhole(await readLocalAuthority(stateDir, DEP)).previous).toBeUndefined();
  });

  it('with no overlap there is nothing to retire, and nothing changes', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const before = snapshotDir(stateDir);
    expect(await retireAuthority(stateDir, DEP)).toEqual({ kind: 'nothing-to-retire', current: fingerprint });
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('refuses a previous pair the current certificate does not name, naming both fingerprints, and deletes nothing', async () => {
    const { stateDir, fingerprint } = await authorityDir({ rotated: true });
    const stranger = await authorityDir();
    copy(ca(stranger.stateDir, 'ca.crt'), ca(stateDir, 'ca-previous.crt'));
    copy(ca(stranger.stateDir, 'ca.key'), ca(stateDir, 'ca-previous.key'), 0o600);
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.previous?.fingerprint).toBe(stranger.fingerprint);
    const error = await refusedUnchanged(
      stateDir,
      () => retireAuthority(stateDir, DEP),
      stranger.fingerprint,
      'not the previous authority',
    );
    expect(error.what).toContain(local.current.replaces!);
    expect(error.where).toBe(ca(stateDir, 'ca-previous.key'));
    expect(fingerprint).toBe(local.current.fingerprint);
  });

  it('refuses when the current certificate carries no replaces claim at all, unless the operator confirms that exact previous authority', async () => {
    const stateDir = await emptyStateDir();
    const previous = await mintAuthority(DEP);
    const current = await mintAuthority(DEP); // minted without `replaces`
    const fp = await fingerprintOfFiles(current);
    await withAuthorityLock(stateDir, () =>
      installAuthority(
        stateDir,
        DEP,
        { ...current, 'ca-previous.crt': previous['ca.crt']!, 'ca-previous.key': previous['ca.key']! },
        fp,
      ),
    );
    await refusedUnchanged(stateDir, () => retireAuthority(stateDir, DEP), 'names no predecessor');
    const previousFp = await fingerprintOfFiles(previous);
    // A confirmation given for another previous authority than the one under the lock is no confirmation.
    const before = snapshotDir(stateDir);
    const mismatch = await retireAuthority(stateDir, DEP, { confirm: confirmationPrefix(fp) }).catch(
      (e: unknown) => e,
    );
    expect(mismatch).toMatchObject({ code: 'usage' });
    expect((mismatch as BatonError).what).toContain('the --confirm given does not match it');
    expect(snapshotDir(stateDir)).toEqual(before);
    expect(await retireAuthority(stateDir, DEP, { confirm: confirmationPrefix(previousFp) })).toEqual({
      kind: 'retired',
      previous: previousFp,
      current: fp,
      unproved: true,
    });
  });

  it('"could not read" never counts as absent: an unsafe or unreadable previous key blocks the retire', async () => {
    for (const spoil of [
      (key: string) => chmodSync(key, 0o644),
      (key: string) => {
        unlinkSync(key);
        mkdirSync(key);
      },
    ]) {
      const { stateDir } = await authorityDir({ rotated: true });
      spoil(ca(stateDir, 'ca-previous.key'));
      expectBlocked(await readLocalAuthority(stateDir, DEP), 'unsafe-key');
      await refusedUnchanged(stateDir, () => retireAuthority(stateDir, DEP), 'ca-previous.key is unsafe');
    }
  });

  it('refuses while the current pair is the repaired tear (the previous key IS the current one)', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    copy(ca(stateDir, 'ca-previous.crt'), ca(stateDir, 'ca.crt'));
    writeFileSync(ca(stateDir, 'ca.crt.new'), 'not what a rotation wrote');
    await refusedUnchanged(
      stateDir,
      () => retireAuthority(stateDir, DEP),
      'Finish the rotation with `baton ca rotate` first.',
    );
  });

  it('refuses over a half-there previous pair of an unrelated authority', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    const stranger = await authorityDir();
    copy(ca(stranger.stateDir, 'ca.crt'), ca(stateDir, 'ca-previous.crt'));
    unlinkSync(ca(stateDir, 'ca-previous.key'));
    await refusedUnchanged(stateDir, () => retireAuthority(stateDir, DEP), 'half there');
  });
});

describe('an interrupted rotation that cannot be finished', () => {
  it('is refused, naming the missing certificate, and nothing is deleted', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    copy(ca(stateDir, 'ca-previous.crt'), ca(stateDir, 'ca.crt')); // tear, with no ca.crt.new to finish it
    const keys = privateKeysBelow(stateDir);
    await refusedUnchanged(
      stateDir,
      () => rotateAuthority(stateDir, DEP),
      'cannot be finished',
      'ca.crt.new is missing',
    );
    expect(privateKeysBelow(stateDir)).toEqual(keys);
  });
});

describe('set aside', () => {
  it('moves ca/ to ca.superseded-<UTC stamp> with a copy of the marker (which stays), deleting nothing, and a second one the same second gets a suffix', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    const before = snapshotDir(stateDir);
    const clock = fixedClock(new Date(Date.UTC(2026, 10, 30, 3, 4, 5)));
    const target = await withAuthorityLock(stateDir, () => setAsideAuthority(stateDir, clock));
    expect(target).toBe(path.join(stateDir, 'ca.superseded-20261130T030405Z'));
    const after = snapshotDir(stateDir);
    for (const [name, entry] of Object.entries(before)) {
      if (name.startsWith('ca/'))
        expect(after[name.replace(/^ca\//, 'ca.superseded-20261130T030405Z/')]).toBe(entry);
    }
    expect(after['ca.superseded-20261130T030405Z.authority-created']).toBe(before['authority-created']);
    // The marker stays: without it billet would read the emptied dir as day one and mint.
    expect(after['authority-created']).toBe(before['authority-created']);
    expect((await readLocalAuthority(stateDir, DEP)).state).toBe('lost');

    const files = await mintAuthority(DEP);
    const fp = await fingerprintOfFiles(files);
    await withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fp));
    const second = await withAuthorityLock(stateDir, () => setAsideAuthority(stateDir, clock));
    expect(second).toBe(path.join(stateDir, 'ca.superseded-20261130T030405Z-2'));
    expect(snapshotDir(stateDir)['ca.superseded-20261130T030405Z-2.authority-created']).toMatch(/^file 644 /);
    // The first one set aside is still there, untouched.
    expect(snapshotDir(stateDir)['ca.superseded-20261130T030405Z/ca.key']).toBe(before['ca/ca.key']);
  });

  it('refuses when there is nothing to set aside, and changes nothing', async () => {
    const stateDir = await emptyStateDir();
    await refusedUnchanged(
      stateDir,
      () => withAuthorityLock(stateDir, () => setAsideAuthority(stateDir)),
      'no local authority to set aside',
    );
  });
});

describe('readAuthorityFiles', () => {
  it('refuses a host that holds nothing, and changes nothing', async () => {
    const stateDir = await emptyStateDir();
    await refusedUnchanged(
      stateDir,
      () => withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP)),
      'this host holds no authority (fresh)',
    );
  });
});
