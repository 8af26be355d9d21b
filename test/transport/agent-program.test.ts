/**
 * The machine side's one program (src/transport/agent/baton-agent.pl) is checked as source, the
 * way tsc and eslint check the rest: `perl -c` with every warning on (-W) must say nothing but
 * "syntax OK", so a typo, an undeclared variable under strict or a name used once fails here
 * instead of on a holder mid-rotation. What baton sends is that file, whole; the loader compiles
 * it without its parts compiled on demand (`#>>> <name>` … `#<<< <name>`), so it is also checked
 * compiled that way, and each part is compiled by the modes that use it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENT_FILE, agentSource } from '../../src/transport/agent-program.js';
import { AGENT_PROTOCOL, serveArgs, serveRequest } from '../../src/transport/agent-protocol.js';
import { agentCommand, agentCore, agentInput, agentLoader } from '../../src/transport/remote-scripts.js';

const file = fileURLToPath(AGENT_FILE);

describe('the agent program', () => {
  it('compiles under strict with every warning on, and says nothing else', () => {
    const run = spawnSync('perl', ['-W', '-Mstrict', '-Mwarnings', '-c', file], { encoding: 'utf8' });
    expect(run.stderr.trim()).toBe(`${file} syntax OK`);
    expect(run.status).toBe(0);
  });

  it('declares strict and run-time warnings itself (what a holder runs has no -M flags)', () => {
    const lines = readFileSync(file, 'utf8').split('\n');
    const code = lines.filter((l) => !l.startsWith('#') && l.trim() !== '');
    expect(code.slice(0, 2)).toEqual(['BEGIN { $^H |= 0x602; }', 'BEGIN { $^W = 1; }']);
    // The bits are `use strict`'s on this perl, and the program's head under them refuses what
    // strict refuses: an undeclared variable, a bareword, a symbolic reference.
    const strictBits = execFileSync('perl', ['-e', 'use strict; BEGIN { print $^H & 0x602 }'], {
      encoding: 'utf8',
    });
    expect(Number(strictBits)).toBe(0x602);
    const head = lines.slice(0, lines.indexOf('BEGIN { $^W = 1; }') + 1).join('\n');
    for (const [body, refusal] of [
      ['$undeclared = 1;', 'Global symbol "$undeclared" requires explicit package name'],
      ['my $bare = bareword;', 'Bareword "bareword" not allowed while "strict subs" in use'],
      ['my $name = "x"; print $$name;', 'Can\'t use string ("x") as a SCALAR ref while "strict refs" in use'],
    ]) {
      const run = spawnSync('perl', ['-e', `${head}\n${body}`], { encoding: 'utf8' });
      expect(run.status, body).not.toBe(0);
      expect(run.stderr, body).toContain(refusal);
    }
  });

  it('is what a session sends first on its stdin, whole; the command line carries the loader and what a read needs, in base64', () => {
    const text = readFileSync(file, 'utf8').trimEnd();
    expect(agentSource()).toBe(text);
    expect(agentInput('secret\n')).toBe(`${text}secret\n`);
    expect(agentLoader()).toContain(`$Baton::WHOLE = ${Buffer.byteLength(text)};`);
    const core = Buffer.from(agentCore(), 'base64').toString('utf8');
    expect(agentCore()).toMatch(/^[A-Za-z0-9+/]+=*$/);
    // Every line where the file has it: the file's own, or blank where the file has a comment or
    // a line of a part a read never compiles.
    const lines = text.split('\n');
    const leftOut = new Set<number>();
    for (const name of ['writes', 'modes']) {
      const from = lines.findIndex((l) => l.startsWith(`#>>> ${name}:`));
      const to = lines.indexOf(`#<<< ${name}`);
      expect(to).toBeGreaterThan(from);
      for (let i = from; i <= to; i++) leftOut.add(i);
    }
    const coreLines = core.split('\n');
    expect(coreLines.length).toBe(lines.length);
    coreLines.forEach((line, i) => {
      if (line !== lines[i]) {
        expect(line, `line ${i + 1}`).toBe('');
        expect(leftOut.has(i) || /^\s*#/.test(lines[i]!), `line ${i + 1}: ${lines[i]}`).toBe(true);
      }
    });
    expect(core).toContain('sub digests');
    expect(core).toContain('#>>> sha256:');
    expect(core).not.toContain('sub stage');
    expect(core).not.toContain('package Baton::Channel');
    const command = agentCommand(['hello']);
    expect(command).toContain(agentCore());
    expect(command).not.toContain('Baton::Files');
    // A third of the whole program's base64 at most: the login shell scans it at every start.
    expect(command.length).toBeLessThan(Buffer.from(text).toString('base64').length / 3);
  });

  it("serve answers the reads its command carries before it reads stdin at all, then the program's whole text and the requests behind it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-carried-'));
    try {
      writeFileSync(path.join(dir, 'r'), 'receipt\n');
      const carried = serveRequest(['files', 'texts', path.join(dir, 'r')]) + 'hello\n';
      const child = spawn('sh', ['-c', agentCommand(serveArgs(2, carried))]);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      const saw = async (what: string) => {
        for (let i = 0; i < 200 && !out.includes(what); i++) await new Promise((r) => setTimeout(r, 25));
        return out;
      };
      // Nothing written to its stdin yet: the two answers come from the command alone.
      expect(await saw('@baton agent v')).toMatch(
        new RegExp(
          `^@baton \\+receipt\n@baton end ok\n@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n@baton end ok\n$`,
        ),
      );
      // A write on stdin behind the program's text: it compiles the part `writes` from that text.
      child.stdin.write(agentInput(serveRequest(['files', 'stage', path.join(dir, 'a')], 'new\n')));
      child.stdin.end();
      const exit = await new Promise<number | null>((r) => child.on('exit', r));
      expect(exit).toBe(0);
      expect(out.split('@baton end ok').length - 1).toBe(3);
      expect(readFileSync(path.join(dir, 'a.next'), 'utf8')).toBe('new');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compiles, as the loader compiles it (its parts on demand left out), under strict with every warning on', () => {
    const text = readFileSync(file, 'utf8');
    const parts = [...text.matchAll(/^#>>> (\w+):/gm)].map((m) => m[1]);
    expect(parts).toEqual(['sha256', 'writes', 'modes']);
    for (const name of parts) expect(text).toMatch(new RegExp(`^#<<< ${name}$`, 'm'));
    // The loader's own cut, by perl: what is left out is blank lines, so line numbers stay the
    // file's. The same of the whole text (read from stdin) and of the core (the command's).
    const core = Buffer.from(agentCore(), 'base64').toString('utf8');
    const cutOf = (input: string) =>
      spawnSync(
        'perl',
        ['-e', `local $/; my $p = <STDIN>; ${agentLoader().match(/\$p =~ s\/.*?\/gse;/)![0]} print $p`],
        { input, encoding: 'utf8' },
      ).stdout;
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-cut-'));
    try {
      for (const [name, input] of [
        ['whole', text],
        ['core', core],
      ] as const) {
        const cut = cutOf(input);
        expect(cut.split('\n').length, name).toBe(input.split('\n').length);
        expect(cut, name).not.toContain('sub run_command');
        expect(cut, name).not.toContain('sub stage');
        expect(cut, name).toContain('sub digests');
        writeFileSync(path.join(dir, `${name}.pl`), cut);
        const run = spawnSync('perl', ['-W', '-c', path.join(dir, `${name}.pl`)], { encoding: 'utf8' });
        expect(run.stderr.trim(), name).toBe(`${path.join(dir, `${name}.pl`)} syntax OK`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the program as bytes whatever the holder's PERL_UNICODE makes of stdin", () => {
    const hello = execFileSync('sh', ['-c', agentCommand(['hello'])], {
      encoding: 'utf8',
      input: agentInput(),
      env: { ...process.env, PERL_UNICODE: 'SDA' },
    });
    expect(hello).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
  });

  it('runs only a program that arrived whole: a short one is refused and nothing of it runs', () => {
    const run = spawnSync('sh', ['-c', agentCommand(['hello'])], {
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

  // What ssh hands a login shell is one line that shell runs itself (no `sh -c` around it): it
  // must mean the same in every login shell a holder's account may have. csh and tcsh are not
  // among them (docs/agent-protocol.md): they have no `2>&1` nor `3<&0`.
  const LOGIN_SHELLS = ['sh', 'dash', 'bash', 'zsh', 'mksh', 'fish'];
  const shellPath = (name: string) =>
    spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim() || undefined;
  it(`runs the same under each login shell (${LOGIN_SHELLS.join(', ')}): hello, no-perl, hostile paths`, () => {
    const missing = LOGIN_SHELLS.filter((name) => !shellPath(name));
    // .ci/run installs them; elsewhere a missing one is named here, and the others still run.
    if (process.env.CI === 'true') expect(missing, 'login shells missing under CI=true').toEqual([]);
    else if (missing.length) console.warn(`agent-program: not on this host, not run: ${missing.join(', ')}`);
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-shells-'));
    try {
      const names = ["it's here", '$HOME `id` \\n $(id)', 'a;b|c&d'];
      names.forEach((name, i) => writeFileSync(path.join(dir, name), `text ${i}\n`));
      mkdirSync(path.join(dir, 'bin'));
      for (const name of LOGIN_SHELLS.filter((n) => !missing.includes(n))) {
        const shell = shellPath(name)!;
        const hello = spawnSync(shell, ['-c', agentCommand(['hello'])], {
          encoding: 'utf8',
          input: agentInput(),
        });
        expect(hello.stdout, name).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
        const paths = names.map((n) => path.join(dir, n));
        const texts = spawnSync(shell, ['-c', agentCommand(['files', 'texts', ...paths])], {
          encoding: 'utf8',
          input: agentInput(),
        });
        expect([texts.status, texts.stdout], name).toEqual([
          0,
          '@baton +text 0\n@baton +text 1\n@baton +text 2\n',
        ]);
        // The same read carried in a serve's command (hex: nothing there for a shell to read).
        const carried = serveRequest(['files', 'texts', ...paths]);
        const served = spawnSync(shell, ['-c', agentCommand(serveArgs(1, carried))], {
          encoding: 'utf8',
          input: agentInput(),
        });
        expect([served.status, served.stdout], name).toEqual([
          0,
          '@baton +text 0\n@baton +text 1\n@baton +text 2\n@baton end ok\n',
        ]);
        const noPerl = spawnSync(shell, ['-c', agentCommand(['hello'])], {
          encoding: 'utf8',
          env: { PATH: path.join(dir, 'bin') },
          input: agentInput(),
        });
        expect([noPerl.status, noPerl.stdout, noPerl.stderr.split('\n').at(-2)], name).toEqual([
          3,
          '@baton no-perl\n',
          'no perl 5 — baton needs it on every holder',
        ]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('resolve: the hello on this perl, and `no-perl` from a shell whose PATH has no perl', () => {
    const hello = execFileSync('sh', ['-c', agentCommand(['hello'])], {
      encoding: 'utf8',
      input: agentInput(),
    });
    expect(hello).toMatch(new RegExp(`^@baton agent v${AGENT_PROTOCOL} perl 5\\.\\d+\n$`));
    const bin = mkdtempSync(path.join(tmpdir(), 'baton-noperl-'));
    try {
      const out = spawnSync('/bin/sh', ['-c', agentCommand(['hello'])], {
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
            ['-c', agentCommand(['files', op, path.join(root, 'provides/pg-main/app')])],
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

  it('digests small files itself and any number of larger ones with ONE sha256sum an operation (a shell loop started one per path)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-sums-'));
    try {
      const log = path.join(dir, 'calls');
      const sum = execFileSync('sh', ['-c', 'command -v sha256sum'], { encoding: 'utf8' }).trim();
      mkdirSync(path.join(dir, 'bin'));
      writeFileSync(path.join(dir, 'bin/sha256sum'), `#!/bin/sh\necho x >> '${log}'\nexec ${sum} "$@"\n`, {
        mode: 0o755,
      });
      const env = { PATH: `${path.join(dir, 'bin')}:${process.env.PATH ?? ''}` };
      const calls = (paths: string[], op: string, input = '') => {
        writeFileSync(log, '');
        // As ssh hands it over: the command gives the agent the session's stdin (the secrets) on fd 3.
        execFileSync('sh', ['-c', agentCommand(['files', op, ...paths])], { env, input: agentInput(input) });
        return readFileSync(log, 'utf8').split('\n').length - 1;
      };
      // Three credentials of a generated secret's size: one 64-byte block each, live and kept.
      const small = Array.from({ length: 3 }, (_, i) => path.join(dir, 'small', `app_${i}`));
      expect(calls(small, 'digests')).toBe(0); // nothing there to sum
      expect(calls(small, 'stage', small.map(() => `${'x'.repeat(43)}\n`).join(''))).toBe(0);
      expect(calls(small, 'commit')).toBe(0);
      expect(calls(small, 'keep')).toBe(0);
      expect(calls(small, 'digests')).toBe(0);
      // Six files of four blocks: 24 in all, over the 8 digested in Perl: one sha256sum.
      const large = Array.from({ length: 6 }, (_, i) => path.join(dir, 'large', `app_${i}`));
      expect(calls(large, 'stage', large.map((_, i) => `${String(i).repeat(200)}\n`).join(''))).toBe(1);
      expect(calls(large, 'commit')).toBe(0);
      expect(calls(large, 'keep')).toBe(1);
      expect(calls(large, 'digests')).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('digests as sha256sum does at every padding edge, in Perl (up to 8 blocks) and from sha256sum (over)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-sha-'));
    try {
      const lengths = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 447, 448, 1000, 70_000];
      const files = lengths.map((n, i) => {
        const file = path.join(dir, `f${n}`);
        writeFileSync(file, Buffer.from(Array.from({ length: n }, (_, j) => (j * 31 + i) & 0xff)));
        return file;
      });
      const digestOf = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
      for (const file of files) {
        const out = execFileSync('sh', ['-c', agentCommand(['files', 'digests', file])], {
          encoding: 'utf8',
          input: agentInput(),
        });
        expect(out.split('\n')[0]!.split(' ')[1], file).toBe(digestOf(file));
      }
      // All at once: over the limit, so sha256sum; the same digests.
      const out = execFileSync('sh', ['-c', agentCommand(['files', 'digests', ...files])], {
        encoding: 'utf8',
        input: agentInput(),
      });
      const live = out
        .split('\n')
        .filter((l, i) => i % 3 === 0 && l !== '')
        .map((l) => l.split(' ')[1]);
      expect(live).toEqual(files.map(digestOf));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
