import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nextStep } from '../../src/next-step.js';
import {
  installAuthority,
  mintAuthority,
  readAuthorityFiles,
  readLocalAuthority,
  snapshotLocalAuthority,
  withAuthorityLock,
} from '../../src/authority/index.js';
import { readRaw } from '../../src/authority/read-local-authority.js';
import { fingerprintOfFiles } from '../helpers/authority.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import type { BatonError } from '../../src/errors.js';
import {
  authorityDir,
  ca,
  cleanupAll,
  copy,
  DEP,
  emptyStateDir,
  expectBlocked,
  expectEveryWriterRefuses,
  expectWhole,
} from './support.js';

afterEach(cleanupAll);

describe('the states a host can be in', () => {
  it('a host with no files and no marker is fresh', async () => {
    const stateDir = await emptyStateDir();
    expect(await readLocalAuthority(stateDir, DEP)).toEqual({ state: 'fresh', stateDir, unexpected: [] });
    expect(await readLocalAuthority(path.join(stateDir, 'never-created'), DEP)).toMatchObject({
      state: 'fresh',
    });
  });

  it('a marker without key or certificate is lost, and reading it changes nothing', async () => {
    const { stateDir } = await authorityDir();
    rmSync(path.join(stateDir, 'ca'), { recursive: true });
    const before = snapshotDir(stateDir);
    expect(await readLocalAuthority(stateDir, DEP)).toEqual({ state: 'lost', stateDir, unexpected: [] });
    expect(await snapshotLocalAuthority(stateDir, DEP)).toMatchObject({ state: 'lost' });
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('a minted authority reads whole with its fingerprint, expiry and no overlap', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.current.fingerprint).toBe(fingerprint);
    expect(local.current.notAfter.toISOString()).toBe('2036-11-30T10:00:00.000Z');
    expect(local).toMatchObject({
      previous: undefined,
      markerMissing: false,
      repairedTear: false,
      unexpected: [],
    });
    expect(local.pending).toBeUndefined();
  });

  it('during a rotation overlap the previous pair is reported, and the current one names it as replaced', async () => {
    const { stateDir, fingerprint, previous } = await authorityDir({ rotated: true });
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.current.fingerprint).toBe(fingerprint);
    expect(local.previous?.fingerprint).toBe(previous);
    expect(local.current.replaces).toBe(previous);
  });

  it('a whole authority without its marker is reported, and the next locked operation writes the marker back', async () => {
    const { stateDir } = await authorityDir();
    unlinkSync(path.join(stateDir, 'authority-created'));
    expect(expectWhole(await snapshotLocalAuthority(stateDir, DEP)).markerMissing).toBe(true);
    const files = await withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP));
    expect(Buffer.from(files['authority-created']!).toString()).toBe(`${DEP}\n`);
    expect(readFileSync(path.join(stateDir, 'authority-created'), 'utf8')).toBe(`${DEP}\n`);
    expect(expectWhole(await readLocalAuthority(stateDir, DEP)).markerMissing).toBe(false);
  });

  it('unexpected files in ca/ are named, never read and never published', async () => {
    const { stateDir } = await authorityDir();
    writeFileSync(ca(stateDir, 'notes.txt'), 'secret notes');
    writeFileSync(ca(stateDir, '.hidden'), 'x');
    execFileSync('mkfifo', [ca(stateDir, 'pipe')]); // opening a FIFO would hang a reader that read it
    const local = expectWhole(await snapshotLocalAuthority(stateDir, DEP));
    expect(local.unexpected).toEqual(['ca/.hidden', 'ca/notes.txt', 'ca/pipe']);
    const files = await withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP));
    expect(Object.keys(files).sort()).toEqual(['authority-created', 'ca.crt', 'ca.key']);
  });

  it('the published files are exactly the bytes on disk, the previous pair included during an overlap', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    const files = await withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP));
    expect(Object.keys(files).sort()).toEqual([
      'authority-created',
      'ca-previous.crt',
      'ca-previous.key',
      'ca.crt',
      'ca.key',
    ]);
    for (const name of ['ca.crt', 'ca.key', 'ca-previous.crt', 'ca-previous.key'] as const) {
      expect(Buffer.from(files[name]!).equals(readFileSync(ca(stateDir, name))), name).toBe(true);
    }
  });
});

describe('states that block every action, and nothing on disk changes', () => {
  it('a key without its certificate is half-initialised', async () => {
    const { stateDir } = await authorityDir();
    unlinkSync(ca(stateDir, 'ca.crt'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'half-initialised');
    expect(b.error.what).toBe(
      'The authority is half-initialised: ca/ca.key is present but ca/ca.crt is missing.',
    );
    expect(b.error.where).toBe(path.join(stateDir, 'ca'));
    expect(b.error.next).toContain('never repairs half an authority by minting');
    await expectEveryWriterRefuses(stateDir, [
      'half-initialised',
      'ca/ca.crt is missing',
      path.join(stateDir, 'ca'),
    ]);
    // The way out names `sync` as data, and a writer's refusal carries it on unchanged.
    expect(b.error.said).toContainEqual(nextStep('sync'));
    const writer = await batonErrorOf(withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP)));
    expect(writer.said).toEqual(b.error.said);
  });

  it('a certificate without its key is half-initialised', async () => {
    const { stateDir } = await authorityDir();
    unlinkSync(ca(stateDir, 'ca.key'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'half-initialised');
    expect(b.error.what).toContain('ca/ca.crt is present but ca/ca.key is missing');
    await expectEveryWriterRefuses(stateDir, ['ca/ca.key is missing']);
  });

  it('a previous key without its certificate, that is neither a copy of ca.key nor the predecessor the current certificate names, is half an overlap', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    const other = await authorityDir();
    unlinkSync(ca(stateDir, 'ca-previous.crt'));
    unlinkSync(ca(stateDir, 'ca-previous.key'));
    copy(ca(other.stateDir, 'ca.key'), ca(stateDir, 'ca-previous.key'), 0o600);
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'half-initialised');
    expect(b.error.what).toContain('ca/ca-previous.key is present but ca/ca-previous.crt is missing');
    await expectEveryWriterRefuses(stateDir, ['ca-previous.crt is missing']);
  });

  it('a previous certificate that is neither the current one nor its predecessor, without a key, is half an overlap', async () => {
    const { stateDir } = await authorityDir();
    const other = await authorityDir();
    copy(ca(other.stateDir, 'ca.crt'), ca(stateDir, 'ca-previous.crt'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'half-initialised');
    expect(b.error.what).toContain('ca/ca-previous.crt is present but ca/ca-previous.key is missing');
    await expectEveryWriterRefuses(stateDir, ['ca-previous.key is missing']);
  });

  it('a previous pair with no current pair is half-initialised', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    unlinkSync(ca(stateDir, 'ca.crt'));
    unlinkSync(ca(stateDir, 'ca.key'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'half-initialised');
    expect(b.error.what).toContain(
      'ca/ca.crt and ca/ca.key are missing but ca/ca-previous.crt and ca/ca-previous.key are present',
    );
    await expectEveryWriterRefuses(stateDir, ['half-initialised']);
  });

  it('a key that does not pair with the certificate is mismatched', async () => {
    const { stateDir } = await authorityDir();
    const other = await authorityDir();
    copy(ca(other.stateDir, 'ca.key'), ca(stateDir, 'ca.key'), 0o600);
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'mismatched');
    expect(b.error.what).toBe('The key does not pair: ca/ca.key is not the private key of ca/ca.crt.');
    await expectEveryWriterRefuses(stateDir, ['ca/ca.key is not the private key of ca/ca.crt']);
  });

  it('a previous pair that does not pair is mismatched, naming the previous files', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    copy(ca(stateDir, 'ca.key'), ca(stateDir, 'ca-previous.key'), 0o600);
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'mismatched');
    expect(b.error.what).toContain('ca/ca-previous.key is not the private key of ca/ca-previous.crt');
    await expectEveryWriterRefuses(stateDir, ['ca/ca-previous.key']);
  });

  it("another deployment's authority is foreign, naming both deployment ids", async () => {
    const { stateDir } = await authorityDir({ deployment: 'another-deployment' });
    unlinkSync(path.join(stateDir, 'authority-created'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'foreign');
    expect(b.error.what).toBe(
      `ca/ca.crt belongs to another deployment: its Organization is "another-deployment", not "${DEP}".`,
    );
    await expectEveryWriterRefuses(stateDir, ['"another-deployment"', `"${DEP}"`]);
  });

  it('a marker that names another deployment is foreign', async () => {
    const { stateDir } = await authorityDir();
    writeFileSync(path.join(stateDir, 'authority-created'), 'another-deployment\n');
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'foreign');
    expect(b.error.where).toBe(path.join(stateDir, 'authority-created'));
    await expectEveryWriterRefuses(stateDir, ['names deployment "another-deployment"']);
  });

  it('a self-signed certificate that is not a CA is refused as not-ca', async () => {
    const { stateDir } = await authorityDir();
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        ca(stateDir, 'leaf.key'),
        '-out',
        ca(stateDir, 'leaf.crt'),
        '-days',
        '30',
        '-subj',
        `/CN=baton node wire CA/O=${DEP}`,
        '-addext',
        'basicConstraints=critical,CA:FALSE',
      ],
      { stdio: 'ignore' },
    );
    copy(ca(stateDir, 'leaf.key'), ca(stateDir, 'ca.key'), 0o600);
    copy(ca(stateDir, 'leaf.crt'), ca(stateDir, 'ca.crt'));
    unlinkSync(ca(stateDir, 'leaf.key'));
    unlinkSync(ca(stateDir, 'leaf.crt'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'not-ca');
    expect(b.error.what).toBe('ca/ca.crt is not a CA certificate: its basicConstraints do not say cA.');
    await expectEveryWriterRefuses(stateDir, ['is not a CA certificate']);
  });

  it('a CA certificate that another CA signed is refused as not self-signed', async () => {
    const { stateDir } = await authorityDir();
    const work = path.dirname(stateDir);
    const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
    run([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      path.join(work, 'root.key'),
      '-out',
      path.join(work, 'root.crt'),
      '-days',
      '30',
      '-subj',
      '/CN=other root',
    ]);
    writeFileSync(
      path.join(work, 'ext'),
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n',
    );
    run([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      path.join(work, 'sub.key'),
      '-out',
      path.join(work, 'sub.csr'),
      '-subj',
      `/CN=baton node wire CA/O=${DEP}`,
    ]);
    run([
      'x509',
      '-req',
      '-in',
      path.join(work, 'sub.csr'),
      '-CA',
      path.join(work, 'root.crt'),
      '-CAkey',
      path.join(work, 'root.key'),
      '-CAcreateserial',
      '-out',
      path.join(work, 'sub.crt'),
      '-days',
      '30',
      '-extfile',
      path.join(work, 'ext'),
    ]);
    copy(path.join(work, 'sub.key'), ca(stateDir, 'ca.key'), 0o600);
    copy(path.join(work, 'sub.crt'), ca(stateDir, 'ca.crt'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'not-ca');
    expect(b.error.what).toBe('ca/ca.crt is not self-signed: its issuer is not its subject.');
    await expectEveryWriterRefuses(stateDir, ['is not self-signed']);
  });

  it('a certificate that is not PEM is refused as unreadable, naming the file', async () => {
    const { stateDir } = await authorityDir();
    writeFileSync(ca(stateDir, 'ca.crt'), 'garbage');
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'unreadable');
    expect(b.error.what).toContain('ca/ca.crt cannot be parsed');
    await expectEveryWriterRefuses(stateDir, ['ca/ca.crt cannot be parsed']);
  });

  it.each([
    [
      'readable by group',
      (key: string) => chmodSync(key, 0o640),
      'is readable or writable by group or others (mode 0640)',
    ],
    [
      'readable by others',
      (key: string) => chmodSync(key, 0o604),
      'is readable or writable by group or others (mode 0604)',
    ],
    [
      'a symbolic link',
      (key: string) => {
        const real = `${key}.real`;
        copy(key, real, 0o600);
        unlinkSync(key);
        symlinkSync(real, key);
      },
      'is a symbolic link',
    ],
    [
      'a directory',
      (key: string) => {
        unlinkSync(key);
        mkdirSync(key);
      },
      'is not a regular file',
    ],
    [
      'a FIFO',
      (key: string) => {
        unlinkSync(key);
        execFileSync('mkfifo', ['-m', '600', key]);
      },
      'is not a regular file',
    ],
    [
      'larger than 1 MiB',
      (key: string) =>
        writeFileSync(key, Buffer.concat([readFileSync(key), Buffer.alloc(1024 * 1024, 0x0a)])),
      'is larger than 1 MiB',
    ],
  ])('a key file that is %s is unsafe and blocks everything', async (_what, spoil, reason) => {
    const { stateDir } = await authorityDir({ rotated: true });
    for (const name of ['ca.key', 'ca-previous.key']) {
      const { stateDir: dir } = name === 'ca.key' ? { stateDir } : await authorityDir({ rotated: true });
      spoil(ca(dir, name));
      const b = expectBlocked(await readLocalAuthority(dir, DEP), 'unsafe-key');
      expect(b.error.what).toBe(`The key file ${name} is unsafe: it ${reason}.`);
      expect(b.error.where).toBe(ca(dir, name));
      await expectEveryWriterRefuses(dir, [reason, ca(dir, name)]);
    }
  });

  it('a ca/ that is not a directory is unreadable, never absent', async () => {
    const stateDir = await emptyStateDir();
    writeFileSync(path.join(stateDir, 'ca'), 'not a directory');
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'unreadable');
    expect(b.error.what).toBe('The authority directory cannot be read: it is not a directory.');
    await expectEveryWriterRefuses(stateDir, ['cannot be read']);
  });

  it('a certificate that is a symbolic link is not followed', async () => {
    const { stateDir } = await authorityDir();
    copy(ca(stateDir, 'ca.crt'), path.join(stateDir, 'elsewhere.crt'));
    unlinkSync(ca(stateDir, 'ca.crt'));
    symlinkSync(path.join(stateDir, 'elsewhere.crt'), ca(stateDir, 'ca.crt'));
    const b = expectBlocked(await readLocalAuthority(stateDir, DEP), 'unreadable');
    expect(b.error.what).toBe('ca.crt cannot be used: it is a symbolic link.');
    await expectEveryWriterRefuses(stateDir, ['symbolic link']);
  });
});

describe('the torn read', () => {
  it('"new key beside old cert" is repaired by pairing the certificate with ca-previous.key, and nothing is published until the rotation finishes', async () => {
    const { stateDir, previous } = await authorityDir({ rotated: true });
    copy(ca(stateDir, 'ca-previous.crt'), ca(stateDir, 'ca.crt')); // the old cert back beside the new key
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.current.fingerprint).toBe(previous);
    expect(local).toMatchObject({ repairedTear: true, previous: undefined, pending: 'rotate' });
    const before = snapshotDir(stateDir);
    const refusal = await batonErrorOf(withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP)));
    expect(refusal.code).toBe('refused');
    expect(refusal.next).toContain('Finish it with `baton ca rotate`');
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('is repaired only when ca-previous.crt is byte-for-byte the ca.crt read — otherwise the pair is mismatched', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    copy(ca(stateDir, 'ca-previous.crt'), ca(stateDir, 'ca.crt'));
    writeFileSync(
      ca(stateDir, 'ca-previous.crt'),
      Buffer.concat([readFileSync(ca(stateDir, 'ca.crt')), Buffer.from('\n')]),
    );
    expectBlocked(await readLocalAuthority(stateDir, DEP), 'mismatched');
  });
});

describe('the unlocked snapshot reader', () => {
  it('accepts only two identical reads, and says "changing" after three attempts that differ', async () => {
    const a = await authorityDir();
    const b = await authorityDir();
    let n = 0;
    const passes: string[] = [];
    const flapping = async () => {
      const dir = n++ % 2 === 0 ? a.stateDir : b.stateDir;
      passes.push(dir);
      return readRaw(dir);
    };
    const local = await snapshotLocalAuthority(a.stateDir, DEP, { readPass: flapping });
    const blocked = expectBlocked(local, 'changing');
    expect(blocked.error.what).toContain('changed while it was being read');
    expect(passes).toHaveLength(6);
  });

  it('settles on the first two identical reads', async () => {
    const a = await authorityDir();
    const b = await authorityDir();
    const sequence = [b.stateDir, a.stateDir, a.stateDir, a.stateDir];
    const local = await snapshotLocalAuthority(a.stateDir, DEP, {
      readPass: async () => readRaw(sequence.shift()!),
    });
    expect(expectWhole(local).current.fingerprint).toBe(a.fingerprint);
    expect(sequence).toEqual([]);
  });

  it('never takes the lock: it reads while another holder has it', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const local = await withAuthorityLock(stateDir, () => snapshotLocalAuthority(stateDir, DEP));
    expect(expectWhole(local).current.fingerprint).toBe(fingerprint);
  });
});

describe('install', () => {
  it('installs into a fresh host with O_EXCL, writes the marker first, and the modes are 0600 for keys and 0644 for certificates', async () => {
    const stateDir = await emptyStateDir();
    const files = await mintAuthority(DEP);
    const fp = await fingerprintOfFiles(files);
    await withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fp));
    const snap = snapshotDir(stateDir);
    expect(snap['ca']).toBe('dir 700');
    expect(snap['ca/ca.key']).toMatch(/^file 600 /);
    expect(snap['ca/ca.crt']).toMatch(/^file 644 /);
    expect(snap['authority-created']).toMatch(/^file 644 /);
    expect(snap['ca.lock']).toMatch(/^file 600 /);
    expect(Object.keys(snap).sort()).toEqual([
      '.',
      'authority-created',
      'ca',
      'ca.lock',
      'ca/ca.crt',
      'ca/ca.key',
    ]);
    expect(expectWhole(await readLocalAuthority(stateDir, DEP)).current.fingerprint).toBe(fp);
  });

  it('adopts into a lost host and keeps the marker that was there', async () => {
    const { stateDir } = await authorityDir();
    rmSync(path.join(stateDir, 'ca'), { recursive: true });
    const marker = snapshotDir(stateDir)['authority-created'];
    const files = await mintAuthority(DEP);
    const fp = await fingerprintOfFiles(files);
    await withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fp));
    expect(snapshotDir(stateDir)['authority-created']).toBe(marker);
    expect(expectWhole(await readLocalAuthority(stateDir, DEP)).current.fingerprint).toBe(fp);
  });

  it('installs an authority mid-overlap with its previous pair', async () => {
    const source = await authorityDir({ rotated: true });
    const files = await withAuthorityLock(source.stateDir, () => readAuthorityFiles(source.stateDir, DEP));
    const stateDir = await emptyStateDir();
    await withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, source.fingerprint));
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.previous?.fingerprint).toBe(source.previous);
    expect(snapshotDir(stateDir)['ca/ca-previous.key']).toMatch(/^file 600 /);
  });

  it('refuses to install over a whole authority, naming it, and changes nothing', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const files = await mintAuthority(DEP);
    const fp = await fingerprintOfFiles(files);
    const before = snapshotDir(stateDir);
    await expect(
      withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fp)),
    ).rejects.toThrow(
      `This host already holds an authority (${fingerprint}); baton never installs over one.`,
    );
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('refuses files whose fingerprint is not the one decided on, or that are not an authority of this deployment, and changes nothing', async () => {
    const stateDir = await emptyStateDir();
    const files = await mintAuthority(DEP);
    const other = await mintAuthority(DEP);
    const otherFp = await fingerprintOfFiles(other);
    const foreign = await mintAuthority('another-deployment');
    const before = snapshotDir(stateDir);
    const attempt = (f: typeof files, fp: typeof otherFp) =>
      withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, f, fp));
    await expect(attempt(files, otherFp)).rejects.toThrow(`not the ${otherFp} that was decided on`);
    await expect(
      attempt({ 'ca.crt': files['ca.crt']!, 'ca.key': other['ca.key']! }, otherFp),
    ).rejects.toThrow('The key does not pair');
    await expect(attempt(foreign, otherFp)).rejects.toThrow('its Organization is "another-deployment"');
    await expect(attempt({ 'ca.crt': files['ca.crt']! }, otherFp)).rejects.toThrow('ca.key is missing');
    await expect(attempt({ ...other, 'ca-previous.crt': files['ca.crt']! }, otherFp)).rejects.toThrow(
      'half a previous pair',
    );
    expect(snapshotDir(stateDir)).toEqual(before);
  });
});

describe('writes never clobber', () => {
  it('a key that appears in ca/ while an install runs is not overwritten: the install fails naming what it had written', async () => {
    const source = await authorityDir({ rotated: true });
    const files = await withAuthorityLock(source.stateDir, () => readAuthorityFiles(source.stateDir, DEP));
    const stateDir = await emptyStateDir();
    const intruder = 'an intruding key file';
    const error = await withAuthorityLock(stateDir, () =>
      installAuthority(stateDir, DEP, files, source.fingerprint, {
        onStep: (step) => {
          if (step === 'installed ca-previous.crt')
            writeFileSync(ca(stateDir, 'ca.key'), intruder, { mode: 0o600 });
        },
      }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'failed' });
    expect((error as BatonError).what).toContain(
      'Installing the authority failed while writing ca/ca.key (EEXIST).',
    );
    expect((error as BatonError).changed).toContain(
      'Written before the failure: authority-created, ca/ca-previous.key, ca/ca-previous.crt.',
    );
    expect(readFileSync(ca(stateDir, 'ca.key'), 'utf8')).toBe(intruder);
  });
});

describe('rotation files beside an overlap', () => {
  it('are named as unexpected, not taken for a rotation in progress', async () => {
    const { stateDir } = await authorityDir({ rotated: true });
    writeFileSync(ca(stateDir, 'ca.crt.new'), 'left by hand');
    const local = expectWhole(await readLocalAuthority(stateDir, DEP));
    expect(local.pending).toBeUndefined();
    expect(local.previous).toBeDefined();
    expect(local.unexpected).toEqual(['ca/ca.crt.new']);
  });
});
