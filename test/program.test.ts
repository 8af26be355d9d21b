/**
 * A run that names a command registers only that command (src/program.ts): start-up builds one
 * command's options, not all of them. What commander prints and accepts must not change.
 */
import { describe, expect, it } from 'vitest';
import { buildProgram, commandNamed } from '../src/program.js';

const ALL = [
  'status',
  'failover',
  'sync',
  'ca',
  'store',
  'key',
  'mesh',
  'provision',
  'drill',
  'version',
  'completion',
];
const names = (args?: string[]) => buildProgram(args).commands.map((command) => command.name());

describe('the command a run names', () => {
  it('is the first word that is neither a global option nor its value', () => {
    const program = buildProgram();
    expect(commandNamed(program, ['--deployment', 'status', '--state-dir', '/s', 'sync', '--yes'])).toBe(
      'sync',
    );
    expect(commandNamed(program, ['--store=file:///x', '--no-color', 'mesh', 'plan'])).toBe('mesh');
    expect(commandNamed(program, ['--config', 'baton.yaml'])).toBeUndefined();
    expect(commandNamed(program, ['help', 'status'])).toBeUndefined();
    expect(commandNamed(program, ['statsu'])).toBeUndefined();
  });

  it('is the only command registered, and each module registers exactly its own', () => {
    expect(names()).toEqual(ALL);
    for (const name of ALL) expect(names(['--deployment', 'd', name, '--help'])).toEqual([name]);
    // anything else gets the whole tree: a typo is answered with the commands there are
    expect(names(['statsu'])).toEqual(ALL);
    expect(names(['--help'])).toEqual(ALL);
  });

  it('has the same help, options and subcommands either way', () => {
    const whole = buildProgram();
    for (const name of ALL) {
      const alone = buildProgram([name]).commands[0]!;
      const inTree = whole.commands.find((command) => command.name() === name)!;
      expect(alone.helpInformation()).toBe(inTree.helpInformation());
      expect(alone.commands.map((sub) => sub.helpInformation())).toEqual(
        inTree.commands.map((sub) => sub.helpInformation()),
      );
    }
  });
});
