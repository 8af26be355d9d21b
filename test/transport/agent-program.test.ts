/**
 * The machine side's one program (src/transport/agent/baton-agent.pl) is checked as source, the
 * way tsc and eslint check the rest: `perl -c` with every warning on (-W) must say nothing but
 * "syntax OK", so a typo, an undeclared variable under strict or a name used once fails here
 * instead of on a holder mid-rotation. What baton sends is that file, whole.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  it('runs from the here-document as ssh hands it over: `files texts` answers one line per path', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-agent-'));
    try {
      writeFileSync(path.join(dir, 'a'), 'one\ntwo\n');
      const out = execFileSync(
        'sh',
        [
          '-c',
          agentBootstrap(),
          'baton-agent',
          'files',
          'texts',
          path.join(dir, 'a'),
          path.join(dir, 'missing'),
        ],
        { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] },
      );
      expect(out).toBe('@baton +onetwo\n@baton -\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
