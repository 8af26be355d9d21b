/**
 * A bench run of two fake cases for run-cases.test.ts: the first measures one figure, the
 * second never finishes (the test sends a signal). argv: <results file> <cleanup marker>.
 */
import { writeFileSync } from 'node:fs';
import type { BenchCase, BenchContext } from '../bench/lib/context.js';
import { figure } from '../bench/lib/figure.js';
import { runCases } from '../bench/lib/run-cases.js';

const [resultsFile, marker] = process.argv.slice(2) as [string, string];
const ctx: BenchContext = { runs: 1, tempDir: () => '/nonexistent', log: () => undefined };
const measured: BenchCase = {
  name: 'measured',
  run: () =>
    Promise.resolve({
      figures: [
        figure({
          id: 'fake.first',
          title: 'the first case',
          measured: { label: 'x', value: 12, unit: 'ms' },
          goal: { kind: 'none' },
        }),
      ],
      skipped: [],
    }),
};
const endless: BenchCase = {
  name: 'endless',
  run: () => new Promise(() => setInterval(() => undefined, 1_000)),
};
await runCases([measured, endless], ctx, {
  resultsFile,
  machine: { cpus: 2 },
  cleanup: () => writeFileSync(marker, 'cleaned'),
});
