/**
 * `baton completion bash|zsh|fish` and baton(1) (docs/cli.md, "Completion and the man page"):
 * both are made from commander's definitions, so every command and flag the CLI has is in
 * them. Bash's script is run for real: the function answers what a Tab would.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/program.js';
import { cliTree, everyCommand } from '../../src/commands/cli-tree.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';
import { itWithPart } from '../helpers/real-part.js';

/** groff and man read the page as a reader's `man baton` does (Debian: groff-base, man-db). */
const missingMan = ['/usr/bin/groff', '/usr/bin/man'].filter((file) => !existsSync(file));
const manMissing =
  missingMan.length > 0
    ? `${missingMan.join(' and ')} not installed (apt-get install man-db groff-base)`
    : undefined;
const DEPLOYMENT = 'b0a710cac4e0b0a710cac4e0b0a710ca';
const temp = makeTempDir('baton-completion-');
afterAll(() => temp.cleanup());
const tree = cliTree(buildProgram());
let bashScript: string;

beforeAll(async () => {
  assertBuilt();
  const config = path.join(temp.dir, 'baton.yaml');
  writeFileSync(config, `deployment: ${DEPLOYMENT}\n`);
  const run = await runBaton(['--config', config, 'completion', 'bash']);
  expect(run.stderr).toBe('');
  expect(run.exitCode).toBe(0);
  bashScript = path.join(temp.dir, 'baton.bash');
  writeFileSync(bashScript, run.stdout);
});

/** What bash's completion offers for the words typed, the last one being completed. */
async function tab(...words: string[]): Promise<string[]> {
  const line = ['baton', ...words];
  const script = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _baton_complete; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const run = await execa('bash', ['-c', script, 'bash', bashScript, ...line]);
  return run.stdout.split('\n').filter(Boolean);
}

describe('baton completion', () => {
  it('bash: the commands, a group’s subcommands, a command’s flags, and the configured deployment', async () => {
    expect(await tab('')).toEqual(
      expect.arrayContaining(['status', 'mesh', 'completion', 'version', '--config']),
    );
    expect(await tab('mesh', 'st')).toEqual(['status']);
    expect(await tab('mesh', 'status', '--j')).toEqual(['--json']);
    // a global flag and its value before the command do not hide the command
    expect(await tab('--state-dir', 'mesh', 'mesh', 'rotate', '--revoke')).toEqual(['--revoke-previous']);
    expect(await tab('status', '--deployment', '')).toEqual([DEPLOYMENT]);
    // a flag that takes a value: nothing offered, so bash completes a file name (-o default)
    expect(await tab('mesh', 'plan', '--inventory', '')).toEqual([]);
  });

  it('bash: every flag of every command is offered after it', async () => {
    for (const command of everyCommand(tree).filter((c) => c.words !== '' && !c.words.endsWith('help'))) {
      const offered = await tab(...command.words.split(' '), '-');
      for (const flag of command.flags.flatMap((f) => f.names))
        expect(offered, command.words).toContain(flag);
    }
  }, 120_000);

  it('zsh uses the bash function through bashcompinit; fish names each subcommand and flag', async () => {
    const zsh = await runBaton(['completion', 'zsh']);
    expect(zsh.stdout).toMatch(/^#compdef baton\n/);
    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -o default -F _baton_complete baton');
    const fish = await runBaton(['completion', 'fish']);
    expect(fish.exitCode).toBe(0);
    expect(fish.stdout).toContain(`complete -c baton -n '__baton_at \\'mesh\\'' -a 'status'`);
    expect(fish.stdout).toContain(`complete -c baton -n '__baton_at \\'mesh status\\'' -l json`);
  });

  it('refuses a shell it does not complete, naming the ones it does (exit 2)', async () => {
    const run = await runBaton(['completion', 'tcsh']);
    expect(run.exitCode).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /"tcsh" is not a shell baton completes\.\n {2}Next: Pass one of bash, zsh, fish/,
    );
  });
});

describe('baton(1)', () => {
  const page = () => readFileSync(path.join(REPO, 'dist', 'man', 'baton.1'), 'utf8');

  itWithPart(
    manMissing,
    'is built into dist/man/baton.1, the package’s man entry, and groff reads it without a warning',
    async () => {
      const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { man: string[] };
      expect(pkg.man).toEqual(['./dist/man/baton.1']);
      const groff = await execa('groff', ['-ww', '-man', '-z', path.join(REPO, 'dist', 'man', 'baton.1')]);
      expect(groff.stderr).toBe('');
    },
  );

  itWithPart(manMissing, 'lists every command with its flags and the exit codes', async () => {
    const text = (
      await execa('man', ['-l', path.join(REPO, 'dist', 'man', 'baton.1')], { env: { MANWIDTH: '200' } })
    ).stdout;
    for (const command of everyCommand(tree).filter((c) => c.commands.length === 0 && c.name !== 'help')) {
      expect(text, command.words).toContain(command.usage);
      for (const flag of command.flags) expect(text, `${command.words} ${flag.flags}`).toContain(flag.flags);
    }
    expect(text).toMatch(/EXIT STATUS\n\s+0\s+ok/);
    expect(page()).toMatch(/^\.TH BATON 1/);
  });
});
