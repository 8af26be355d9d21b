/**
 * The order vitest hands files to its workers: the slowest first (test/file-seconds.ts), then
 * the rest in vitest's own order. Without it a clean clone (no vitest cache) runs the largest
 * files first, and a 40-second real-PostgreSQL suite that starts last keeps one worker busy
 * while the other idles: the run's wall time is then its longest tail, not its sum over workers.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { FILE_SECONDS } from './file-seconds.js';

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const seconds = (spec: TestSpecification) =>
      FILE_SECONDS[path.relative(this.ctx.config.root, spec.moduleId).split(path.sep).join('/')] ?? 0;
    // A stable sort: files of equal (or no) weight keep vitest's order.
    return ordered
      .map((spec, index) => ({ spec, index, weight: seconds(spec) }))
      .sort((a, b) => b.weight - a.weight || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
