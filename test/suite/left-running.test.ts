/**
 * The run leaves nothing running when a test fails or times out: a vitest of its own runs two
 * fixture files with the project's global setup (test/global-setup.ts), one timing out with a
 * real PostgreSQL and two children running, one whose worker is SIGKILLed mid-test. The run
 * must fail naming each process, and afterwards none of them (nor a PostgreSQL backend) is alive.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/bundle-script.js';
import { debianPostgresMissing } from '../helpers/postgres.js';
import { partPresent } from '../helpers/real-part.js';

function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'latin1').includes(') Z ');
  } catch {
    return false;
  }
}

function commandLines(): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
      } catch {
        return '';
      }
    });
}

if (partPresent("Debian's PostgreSQL 15", debianPostgresMissing()))
  describe('a run whose tests fail or time out', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-left-running-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('ends every process its tests started and fails naming them', () => {
      const pidsFile = path.join(dir, 'pids');
      writeFileSync(pidsFile, '');
      const config = path.join(dir, 'vitest.config.mjs');
      writeFileSync(
        config,
        `export default ${JSON.stringify({
          test: {
            root: REPO,
            include: ['test/suite/fixtures/*.fixture.ts'],
            globalSetup: ['test/global-setup.ts'],
            pool: 'forks',
            maxWorkers: 2,
            // The fixture's set-up is in a hook; its test only waits, so it times out at once.
            testTimeout: 500,
            hookTimeout: 30_000,
          },
        })};\n`,
      );
      const run = spawnSync(
        process.execPath,
        [path.join(REPO, 'node_modules/vitest/vitest.mjs'), 'run', '--config', config, '--root', REPO],
        { cwd: REPO, encoding: 'utf8', env: { ...process.env, LEFT_RUNNING_PIDS: pidsFile, NO_COLOR: '1' } },
      );
      const output = run.stdout + run.stderr;
      const started = readFileSync(pidsFile, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' '))
        .map(([what, pid]) => ({ what: what!, pid: Number(pid) }));

      expect(started.map((p) => p.what).sort(), output).toEqual([
        'inherited',
        'killed-worker',
        'postgres',
        'registered',
      ]);
      expect(run.status, output).toBe(1);
      expect(output).toMatch(/process\(es\) the tests started were still running at the end of the run/);
      for (const { pid } of started) expect(output).toContain(`pid ${pid} `);
      expect(output).toContain('bare node child, started by');
      expect(output).toContain('sleep of a killed worker, started by');
      for (const { what, pid } of started) expect(alive(pid), `${what} ${pid}`).toBe(false);
      const postgres = started.find((p) => p.what === 'postgres')!.pid;
      expect(output).toMatch(new RegExp(`pid \\d+ \\(below pid ${postgres}\\): postgres: checkpointer`));
      // PostgreSQL's backends (checkpointer, walwriter…) named its data dir only through their parent.
      const runDir = /Run directory kept: (\S+)/.exec(output)?.[1];
      expect(runDir).toBeDefined();
      expect(commandLines().filter((line) => line.includes(runDir!))).toEqual([]);
      rmSync(runDir!, { recursive: true, force: true });
      // The inner run's own bounds (a 30 s set-up hook, then a teardown) under a loaded machine.
    }, 120_000);
  });
