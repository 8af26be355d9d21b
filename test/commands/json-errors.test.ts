/**
 * Every `--json` command prints exactly one JSON object on every exit (docs/cli.md, "JSON
 * output"): a usage error commander refuses, a bad value the command refuses and a config error
 * each end with one object on stdout naming the exit code, and the usual three parts on stderr.
 */
import { describe, expect, it } from 'vitest';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

assertBuilt();

const MISSING = '/nonexistent/baton.yaml';
/** Each `--json` command, the arguments that select something, and the format its report names. */
const COMMANDS: readonly { words: string[]; selects: string[]; format?: string }[] = [
  { words: ['status'], selects: [], format: 'baton.status/1' },
  { words: ['mesh', 'status'], selects: ['--consumer', 'app'] },
  { words: ['mesh', 'plan'], selects: ['--consumer', 'app'] },
  { words: ['ca', 'show'], selects: [] },
  { words: ['version'], selects: [], format: 'baton.version/1' },
];

/** The one object stdout holds: JSON.parse refuses a second one, or anything around it. */
function oneObject(stdout: string): Record<string, unknown> {
  const parsed = JSON.parse(stdout) as unknown;
  expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)).toBe(true);
  return parsed as Record<string, unknown>;
}

describe('a --json command that fails prints one JSON object', () => {
  it('mesh status --json --config /nonexistent: one object with exit_code 2', async () => {
    const run = await runBaton(['mesh', 'status', '--json', '--config', '/nonexistent']);
    expect(run.exitCode).toBe(2);
    expect(oneObject(run.stdout)).toMatchObject({
      exit_code: 2,
      error: { code: 'config', where: '/nonexistent', what: expect.stringMatching(/does not exist/) },
    });
    expect(run.stderr).toMatch(/^baton: .*does not exist/);
  });

  for (const { words, selects, format } of COMMANDS) {
    const name = words.join(' ');
    it(`${name} --json: an unknown flag is a usage error, as one object naming its help`, async () => {
      const run = await runBaton([...words, '--json', ...selects, '--no-such-flag']);
      expect(run.exitCode).toBe(2);
      const object = oneObject(run.stdout);
      expect(object).toEqual({
        ...(format === undefined ? {} : { format }),
        exit_code: 2,
        error: {
          code: 'usage',
          reason: null,
          what: "unknown option '--no-such-flag'",
          where: null,
          next: `See \`baton ${name} --help\` for its flags and arguments.`,
          next_steps: [
            { command: `baton ${name} --help`, args: [...words, '--help'], placeholders: [], host: null },
          ],
        },
      });
      expect(run.stderr).toMatch(/unknown option '--no-such-flag'/);
    });

    // `version` reads no config: a missing one is no error for it.
    if (name === 'version') continue;
    it(`${name} --json: a config file that does not exist is a config error, as one object`, async () => {
      const run = await runBaton(['--config', MISSING, ...words, '--json', ...selects]);
      expect(run.exitCode).toBe(2);
      expect(oneObject(run.stdout)).toMatchObject({
        ...(format === undefined ? {} : { format }),
        exit_code: 2,
        error: { code: 'config', where: MISSING, next: expect.stringMatching(/--config/) },
      });
      expect(run.stderr).toMatch(/^baton: .*does not exist\.\n {2}Where: \/nonexistent\/baton\.yaml\n/);
    });
  }

  it('a value the command itself refuses (status --interval 0) is one object too', async () => {
    const dir = '/nonexistent-baton-store';
    const run = await runBaton([
      ...['--deployment', 'b0a710cac4e0b0a710cac4e0b0a710ca', '--no-seal', '--state-dir', dir],
      ...['--store', `file://${dir}`, 'status', '--json', '--interval', '0'],
    ]);
    expect(run.exitCode).toBe(2);
    expect(oneObject(run.stdout)).toMatchObject({
      format: 'baton.status/1',
      exit_code: 2,
      error: { code: 'usage', what: expect.stringMatching(/--interval "0"/) },
    });
  });

  it('without --json a failure prints nothing on stdout', async () => {
    const run = await runBaton(['mesh', 'status', '--config', '/nonexistent', '--consumer', 'app']);
    expect(run.exitCode).toBe(2);
    expect(run.stdout).toBe('');
  });
});
