/**
 * The machine side's one program (src/transport/agent/baton-agent.pl) is checked as source, the
 * way tsc and eslint check the rest: `perl -c` with every warning on (-W) must say nothing but
 * "syntax OK", so a typo, an undeclared variable under strict or a name used once fails here
 * instead of on a holder mid-rotation. What baton sends is that file, whole.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENT_FILE, agentSource } from '../../src/transport/agent-program.js';
import { AGENT_PROTOCOL } from '../../src/transport/agent-protocol.js';
import { agentBootstrap } from '../../src/transport/remote-scripts.js';

const file = fileURLToPath(AGENT_FILE);

describe('the agent program', () => {
  it('compiles under strict with every warning on, and says nothing else', () => {
    const run = spawnSync('perl', ['-W', '-Mstrict', '-Mwarnings', '-c', file], { encoding: 'utf8' });
    expect(run.stderr.trim()).toBe(`${file} syntax OK`);
    expect(run.status).toBe(0);
  });

  it('declares strict and warnings itself (what a holder runs has no -M flags)', () => {
    const code = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => !l.startsWith('#') && l.trim() !== '');
    expect(code.slice(0, 2)).toEqual(['use strict;', 'use warnings;']);
  });

  it('is what the scripts send, whole, inside a here-document it cannot end early', () => {
    const text = readFileSync(file, 'utf8').trimEnd();
    expect(agentSource()).toBe(text);
    expect(text.split('\n')).not.toContain('BATON_PERL');
    expect(agentBootstrap().endsWith(`\n${text}\nBATON_PERL`)).toBe(true);
  });

  it('refuses a mode it does not know, on stderr, with exit 3', () => {
    const run = spawnSync('perl', [file, 'format-disk'], { encoding: 'utf8' });
    expect(run.status).toBe(3);
    expect(run.stderr).toBe('@baton err baton-agent: unknown mode format-disk\n');
    expect(run.stdout).toBe('');
  });

  it('resolve: the hello on this perl, and `no-perl` from a shell whose PATH has no perl', () => {
    const hello = execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], { encoding: 'utf8' });
    expect(hello).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
    const bin = mkdtempSync(path.join(tmpdir(), 'baton-noperl-'));
    try {
      const out = spawnSync('/bin/sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], {
        encoding: 'utf8',
        env: { PATH: bin },
      });
      expect(out.stdout).toBe('@baton no-perl\n');
      expect(out.stderr).toBe('no perl 5 — baton needs it on every holder\n');
      expect(out.status).toBe(3);
      // Whatever it is asked, by name, and nothing is written.
      const root = mkdtempSync(path.join(tmpdir(), 'baton-noperl-root-'));
      try {
        for (const op of ['stage', 'records', 'keep', 'commit', 'restore', 'retire']) {
          const run = spawnSync(
            '/bin/sh',
            ['-c', agentBootstrap(), 'baton-agent', 'files', op, path.join(root, 'provides/pg-main/app')],
            { encoding: 'utf8', env: { PATH: bin }, input: 'secret\n' },
          );
          expect([run.status, run.stderr], op).toEqual([3, 'no perl 5 — baton needs it on every holder\n']);
        }
        expect(readdirSync(root)).toEqual([]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('reads any number of paths with ONE sha256sum an operation (a shell loop started one per path)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-sums-'));
    try {
      const log = path.join(dir, 'calls');
      const sum = execFileSync('sh', ['-c', 'command -v sha256sum'], { encoding: 'utf8' }).trim();
      mkdirSync(path.join(dir, 'bin'));
      writeFileSync(path.join(dir, 'bin/sha256sum'), `#!/bin/sh\necho x >> '${log}'\nexec ${sum} "$@"\n`, {
        mode: 0o755,
      });
      const env = { PATH: `${path.join(dir, 'bin')}:${process.env.PATH ?? ''}` };
      const paths = Array.from({ length: 6 }, (_, i) => path.join(dir, 'pg-main', `app_${i}`));
      const calls = (op: string, input = '') => {
        writeFileSync(log, '');
        // As ssh hands it over: the bootstrap moves stdin (the secrets) to the agent's fd 3.
        execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'files', op, ...paths], { env, input });
        return readFileSync(log, 'utf8').split('\n').length - 1;
      };
      expect(calls('digests')).toBe(0); // nothing there to sum
      expect(calls('stage', paths.map((_, i) => `secret ${i}\n`).join(''))).toBe(1);
      expect(calls('commit')).toBe(0);
      expect(calls('keep')).toBe(1);
      expect(calls('digests')).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
