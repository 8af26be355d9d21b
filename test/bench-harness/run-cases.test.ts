/**
 * `npm run bench` keeps what it measured (test/bench/lib/run-cases.ts): each case's figures are
 * in bench-results.json as soon as the case finishes, a case that throws costs only itself,
 * and a run stopped by SIGTERM or SIGINT (a real child process) leaves every figure measured
 * before it, marked incomplete, naming the signal and the case it stopped in.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BenchCase, BenchContext } from '../bench/lib/context.js';
import { figure } from '../bench/lib/figure.js';
import { runCases, type BenchSummary } from '../bench/lib/run-cases.js';
import { bundleScript, type Bundle } from '../helpers/bundle-script.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const ctx: BenchContext = { runs: 1, tempDir: () => '/nonexistent', log: () => undefined };
const oneFigure = (id: string): BenchCase => ({
  name: id,
  run: () =>
    Promise.resolve({
      figures: [
        figure({ id, title: id, measured: { label: id, value: 1, unit: 'ms' }, goal: { kind: 'none' } }),
      ],
      skipped: [],
    }),
});
const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as BenchSummary;

let tmp: ReturnType<typeof makeTempDir>;
let child: Bundle;
beforeAll(async () => {
  tmp = makeTempDir('baton-bench-harness-');
  child = await bundleScript(path.join(import.meta.dirname, 'cut-short-child.ts'));
});
afterAll(() => {
  child.remove();
  tmp.cleanup();
});

describe('the bench keeps each case as it finishes', () => {
  it('the file holds a case the moment it ends; a case that throws is named and the next still runs', async () => {
    const file = path.join(tmp.dir, 'in-process.json');
    const seen: string[][] = [];
    const peek: BenchCase = {
      name: 'peek',
      run: () => {
        seen.push(read(file).figures.map((f) => f.id));
        return Promise.resolve({ figures: [], skipped: [] });
      },
    };
    const throws: BenchCase = { name: 'throws', run: () => Promise.reject(new Error('sshd did not start')) };
    const out: string[] = [];
    const summary = await runCases([oneFigure('a'), peek, throws, oneFigure('b')], ctx, {
      resultsFile: file,
      machine: {},
      cleanup: () => undefined,
      out: (text) => out.push(text),
      log: () => undefined,
    });
    expect(seen).toEqual([['a']]);
    const kept = read(file);
    expect(kept.figures.map((f) => f.id)).toEqual(['a', 'b']);
    expect(kept.failed).toEqual([{ name: 'throws', error: 'sshd did not start' }]);
    expect(kept.complete).toBe(true);
    expect(summary.complete).toBe(true);
    // Each case's rows are printed when it ends, not all at the end.
    expect(out).toHaveLength(3);
    expect(out[0]).toMatch(/\na +1 ms/);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    it(`${signal} in the second case: the first case's figure stays, marked incomplete, temp dirs removed`, async () => {
      const file = path.join(tmp.dir, `${signal}.json`);
      const marker = path.join(tmp.dir, `${signal}.cleaned`);
      const run = spawn(process.execPath, [child.file, file, marker], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      run.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => run.once('exit', (code) => resolve(code)));
      await vi.waitFor(
        () => {
          const now = existsSync(file) ? read(file) : undefined;
          expect(now?.running).toBe('endless');
        },
        { timeout: 10_000, interval: 20 },
      );
      run.kill(signal);
      expect(await exited).toBe(signal === 'SIGINT' ? 130 : 143);
      const kept = read(file);
      expect(kept.figures.map((f) => f.id)).toEqual(['fake.first']);
      expect(kept).toMatchObject({ complete: false, interrupted: signal, running: 'endless' });
      expect(readFileSync(marker, 'utf8')).toBe('cleaned');
      expect(stderr).toContain(`${signal} during endless: 1 figure(s) kept`);
    });
});
