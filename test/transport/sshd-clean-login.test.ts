/**
 * The test sshd's logins read no shell rc: bash started by sshd for a command sources
 * ~/.bashrc, and root's (a pyenv init) made every login of the ssh suites take 6–31 s under
 * load. A HOME with a deliberately slow rc that leaves a mark shows the rc is read without the
 * helper's SetEnv and not with it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partPresent } from '../helpers/real-part.js';
import { CLEAN_LOGIN_ENV, startSshd, sshdUnavailable, type Sshd } from '../helpers/sshd.js';

const RC_SECONDS = 2;

function login(sshd: Sshd): { ms: number; out: string } {
  const started = Date.now();
  const out = execFileSync(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-i',
      sshd.identity,
      '-p',
      String(sshd.port),
      '-o',
      `UserKnownHostsFile=${sshd.knownHosts}`,
      '-o',
      'BatchMode=yes',
      `${sshd.user}@127.0.0.1`,
      'echo "home=$HOME shlvl=$SHLVL"',
    ],
    { encoding: 'utf8' },
  );
  return { ms: Date.now() - started, out: out.trim() };
}

if (partPresent('sshd', sshdUnavailable()))
  describe('the test sshd logs in without the shell rc', () => {
    let home: string;
    const mark = () => path.join(home, 'rc-was-read');
    beforeAll(() => {
      home = mkdtempSync(path.join(os.tmpdir(), 'baton-slow-rc-'));
      writeFileSync(path.join(home, '.bashrc'), `touch ${mark()}\nsleep ${RC_SECONDS}\n`);
    });
    afterAll(() => rmSync(home, { recursive: true, force: true }));

    it('reads a slow rc without the helper setting (the measurement before)', async () => {
      const sshd = await startSshd({ settings: { SetEnv: `HOME=${home}` } });
      try {
        const { ms, out } = login(sshd);
        console.log(`login with the slow rc: ${ms} ms`);
        expect(out).toBe(`home=${home} shlvl=1`);
        expect(existsSync(mark())).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(RC_SECONDS * 1000);
      } finally {
        rmSync(mark(), { force: true });
        await sshd.stop();
      }
    });

    it('does not read it with the helper setting, so a login does not wait for it', async () => {
      const sshd = await startSshd({ settings: { SetEnv: `${CLEAN_LOGIN_ENV} HOME=${home}` } });
      try {
        const { ms, out } = login(sshd);
        console.log(`login with the same rc and ${CLEAN_LOGIN_ENV}: ${ms} ms`);
        expect(out).toBe(`home=${home} shlvl=2`);
        expect(existsSync(mark())).toBe(false);
      } finally {
        await sshd.stop();
      }
    });

    it('is what the helper sets by default (bash then counts itself a nested shell)', async () => {
      const sshd = await startSshd();
      try {
        expect(login(sshd).out).toBe(`home=${os.userInfo().homedir} shlvl=2`);
      } finally {
        await sshd.stop();
      }
    });
  });
