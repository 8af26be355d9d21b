// Every file the build puts in dist/ (bundles, their code caches, the start file) is written
// beside its final name and renamed into place: a test (or an operator) running the bin while
// another build runs always loads a whole file, never a half-written one.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Writes `contents` to `target` through a temporary file beside it and a rename. */
export function writeAtomically(target, contents) {
  mkdirSync(path.dirname(target), { recursive: true });
  const temp = `${target}.${process.pid}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, target);
}
