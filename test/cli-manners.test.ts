/**
 * The CLI's manners: `--version`, a bare `baton` (help on stdout, exit 0), and
 * `status --json --watch` as one JSON line per read until interrupted.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchStatusJson } from '../src/app/status-watch-json.js';
import { statusJson } from '../src/app/status-json.js';
import { BatonError } from '../src/errors.js';
import { READS } from './app/status-fixtures.js';
import { makeTempDir } from './helpers/fs-snapshot.js';
import { assertBuilt, runBaton, startBaton } from './helpers/run-baton.js';
import { REPO } from './helpers/bundle-script.js';
import { ifSet } from './helpers/if-set.js';

let root: { dir: string; cleanup: () => void };
beforeAll(() => {
  assertBuilt();
  root = makeTempDir('baton-cli-');
});
afterAll(() => ifSet(root)?.cleanup());

describe('the CLI manners', () => {
  it('`--version` prints the version of package.json and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const run = await runBaton([flag]);
      expect(run.exitCode).toBe(0);
      expect(run.stdout.trim()).toBe(version);
      expect(run.stderr).toBe('');
    }
  });

  it('a bare `baton` (or only global options) prints the help on stdout and exits 0; a typo still exits 2', async () => {
    for (const args of [[], ['--no-color'], ['--deployment', 'd1']]) {
      const run = await runBaton(args);
      expect(run.exitCode, args.join(' ')).toBe(0);
      expect(run.stdout).toContain('Usage: baton');
      expect(run.stdout).toContain('Exit codes');
      expect(run.stderr).toBe('');
    }
    const typo = await runBaton(['statsu']);
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toContain("unknown command 'statsu'");
  });

  it("`status --json --watch` prints one JSON object per line, per read, until SIGINT; the exit code is the last read's", async () => {
    const store = path.join(root.dir, 'store');
    mkdirSync(store);
    const args = [
      '--deployment',
      'd1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1',
      '--no-seal',
      '--state-dir',
      path.join(root.dir, 'a'),
      '--store',
      `file://${store}`,
    ];
    expect((await runBaton([...args, 'ca', 'init', '--yes'])).exitCode).toBe(0);
    const child = startBaton([...args, 'status', '--json', '--watch', '--interval', '1']);
    const lines: string[] = [];
    await new Promise<void>((resolve) => {
      let buffer = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        lines.push(...buffer.split('\n').slice(0, -1));
        buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
        if (lines.length >= 2) resolve();
      });
    });
    child.kill('SIGINT');
    const result = await child;
    // Published nowhere yet: this host is ahead, "action needed" (3), on every line and at exit.
    const objects = lines.map(
      (line) => JSON.parse(line) as { format: string; exit_code: number; read_at: string },
    );
    expect(objects.map((o) => o.format)).toEqual(['baton.status/1', 'baton.status/1']);
    expect(objects[0]!.read_at < objects[1]!.read_at).toBe(true);
    expect(result.exitCode).toBe(objects[1]!.exit_code);
    expect(result.stderr).toBe('');
  });
});

describe('status with a rotation overlap open', () => {
  it('is in sync but says the overlap is open and names ca retire, the step without which ca rotate refuses', async () => {
    // A parent of its own: a sibling store of one deployment would be a near miss (minting refused).
    const store = path.join(root.dir, 'overlap', 'store');
    mkdirSync(store, { recursive: true });
    const args = [
      '--deployment',
      'd1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1',
      '--no-seal',
      '--state-dir',
      path.join(root.dir, 'overlap'),
      '--store',
      `file://${store}`,
    ];
    expect((await runBaton([...args, 'sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    expect((await runBaton([...args, 'ca', 'rotate'])).exitCode).toBe(0);
    expect((await runBaton([...args, 'sync', '--push'])).exitCode).toBe(0);
    const status = await runBaton([...args, 'status']);
    expect(status.exitCode).toBe(0);
    const flat = status.stdout.replace(/\s+/g, ' ');
    expect(flat).toContain('in sync');
    expect(flat).not.toContain('Nothing to do');
    expect(flat).toContain('A rotation overlap is open');
    expect(flat).toMatch(
      /Once every node trusts the current authority: baton --deployment d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1 --state-dir \S+ --store \S+ --no-seal ca retire/,
    );
    const rotate = await runBaton([...args, 'ca', 'rotate']);
    expect(rotate.exitCode).not.toBe(0);
    expect(rotate.stderr).toContain('A rotation overlap is already in progress');
  });
});

describe('the NDJSON watch loop', () => {
  it('writes a line per read, an error line for a failed read and goes on, and stops when aborted', async () => {
    const stop = new AbortController();
    const written: string[] = [];
    let reads = 0;
    const code = await watchStatusJson({
      read: async () => {
        reads += 1;
        if (reads === 2) throw new BatonError('failed', { what: 'The store did not answer.' });
        if (reads === 3) stop.abort();
        return READS.leftBehind();
      },
      json: (report) => statusJson(report),
      write: (line) => written.push(line),
      pause: () => new Promise((resolve) => setTimeout(resolve, 1)),
      signal: stop.signal,
    });
    expect(written).toHaveLength(3);
    expect(written.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
    const [first, second] = written.map(
      (line) => JSON.parse(line) as { exit_code: number; error?: { what: string } },
    );
    expect(first!.exit_code).toBe(3);
    expect(second!.error?.what).toBe('The store did not answer.');
    expect(code).toBe(3);
  });
});
