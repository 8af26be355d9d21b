/**
 * The machine side's one program (src/transport/agent/baton-agent.pl) is checked as source, the
 * way tsc and eslint check the rest: `perl -c` with every warning on (-W) must say nothing but
 * "syntax OK", so a typo, an undeclared variable under strict or a name used once fails here
 * instead of on a holder mid-rotation. What baton sends is that file, whole; the loader compiles
 * it without its parts compiled on demand (`#>>> <name>` … `#<<< <name>`), so it is also checked
 * compiled that way, and each part is compiled by the modes that use it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENT_FILE, agentSource } from '../../src/transport/agent-program.js';
import { AGENT_PROTOCOL } from '../../src/transport/agent-protocol.js';
import { agentBootstrap, agentInput, agentLoader } from '../../src/transport/remote-scripts.js';

const file = fileURLToPath(AGENT_FILE);

describe('the agent program', () => {
  it('compiles under strict with every warning on, and says nothing else', () => {
    const run = spawnSync('perl', ['-W', '-Mstrict', '-Mwarnings', '-c', file], { encoding: 'utf8' });
    expect(run.stderr.trim()).toBe(`${file} syntax OK`);
    expect(run.status).toBe(0);
  });

  it('declares strict and run-time warnings itself (what a holder runs has no -M flags)', () => {
    const code = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => !l.startsWith('#') && l.trim() !== '');
    expect(code.slice(0, 2)).toEqual(['use strict;', 'BEGIN { $^W = 1; }']);
  });

  it('is what a session sends first on its stdin, whole; the command line carries only the bootstrap', () => {
    const text = readFileSync(file, 'utf8').trimEnd();
    expect(agentSource()).toBe(text);
    expect(agentInput('secret\n')).toBe(`${text}secret\n`);
    expect(agentBootstrap()).not.toContain('use strict');
    expect(agentBootstrap().length).toBeLessThan(1024);
    expect(agentLoader()).toContain(`(${Buffer.byteLength(text)}, "")`);
  });

  it('compiles, as the loader compiles it (its parts on demand left out), under strict with every warning on', () => {
    const text = readFileSync(file, 'utf8');
    const parts = [...text.matchAll(/^#>>> (\w+):/gm)].map((m) => m[1]);
    expect(parts).toEqual(['writes', 'modes']);
    for (const name of parts) expect(text).toMatch(new RegExp(`^#<<< ${name}$`, 'm'));
    // The loader's own cut, by perl: what is left out is blank lines, so line numbers stay the file's.
    const cut = spawnSync(
      'perl',
      ['-e', `local $/; my $p = <STDIN>; ${agentLoader().match(/\$p =~ s\/.*?\/gse;/)![0]} print $p`],
      { input: text, encoding: 'utf8' },
    ).stdout;
    expect(cut.split('\n').length).toBe(text.split('\n').length);
    expect(cut).not.toContain('sub run_command');
    expect(cut).not.toContain('sub stage');
    expect(cut).toContain('sub digests');
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-cut-'));
    try {
      writeFileSync(path.join(dir, 'cut.pl'), cut);
      const run = spawnSync('perl', ['-W', '-c', path.join(dir, 'cut.pl')], { encoding: 'utf8' });
      expect(run.stderr.trim()).toBe(`${path.join(dir, 'cut.pl')} syntax OK`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the program as bytes whatever the holder's PERL_UNICODE makes of stdin", () => {
    const hello = execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], {
      encoding: 'utf8',
      input: agentInput(),
      env: { ...process.env, PERL_UNICODE: 'SDA' },
    });
    expect(hello).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
  });

  it('runs only a program that arrived whole: a short one is refused and nothing of it runs', () => {
    const run = spawnSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], {
      input: agentSource().slice(0, 1000),
      encoding: 'utf8',
    });
    expect([run.status, run.stdout, run.stderr]).toEqual([
      3,
      '',
      '@baton err baton-agent: the program arrived short\n',
    ]);
  });

  it('refuses a mode it does not know, on stderr, with exit 3', () => {
    const run = spawnSync('perl', [file, 'format-disk'], { encoding: 'utf8' });
    expect(run.status).toBe(3);
    expect(run.stderr).toBe('@baton err baton-agent: unknown mode format-disk\n');
    expect(run.stdout).toBe('');
  });

  it('resolve: the hello on this perl, and `no-perl` from a shell whose PATH has no perl', () => {
    const hello = execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], {
      encoding: 'utf8',
      input: agentInput(),
    });
    expect(hello).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
    const bin = mkdtempSync(path.join(tmpdir(), 'baton-noperl-'));
    try {
      const out = spawnSync('/bin/sh', ['-c', agentBootstrap(), 'baton-agent', 'hello'], {
        encoding: 'utf8',
        env: { PATH: bin },
        input: agentInput(),
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
            { encoding: 'utf8', env: { PATH: bin }, input: agentInput('secret\n') },
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
        execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'files', op, ...paths], {
          env,
          input: agentInput(input),
        });
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
