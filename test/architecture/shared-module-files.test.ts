/**
 * The files that share their worker's modules (test/shared-module-files.ts, vitest.config.ts's
 * `shared` project) must leave nothing behind for the next file in that worker: none may mock a
 * module, stub or spy, set the environment, listen on `process` or fake the clock. A file that
 * starts to is named here, to be taken off the list (it then gets a module graph of its own).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHARED_MODULE_FILES } from '../shared-module-files.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** What one file could leave for the next in a shared worker. */
const LEAVES_STATE =
  /vi\.mock|vi\.doMock|vi\.stub|spyOn\(|process\.on\(|process\.once\(|process\.env\.[A-Za-z_]+ *=[^=]|process\.env\[[^\]]+\] *=[^=]|delete process\.env|useFakeTimers|process\.chdir|globalThis\.|process\.exitCode|process\.umask|setMaxListeners|Object\.defineProperty\(process/;

describe('the test files that share their modules', () => {
  it('exist, and none mocks, stubs, spies, sets the environment, listens on process or fakes the clock', () => {
    const missing = SHARED_MODULE_FILES.filter((f) => !existsSync(path.join(ROOT, f)));
    expect(missing).toEqual([]);
    const leaving = SHARED_MODULE_FILES.filter((f) =>
      LEAVES_STATE.test(readFileSync(path.join(ROOT, f), 'utf8')),
    ).map((f) => `${f}: ${LEAVES_STATE.exec(readFileSync(path.join(ROOT, f), 'utf8'))?.[0] ?? ''}`);
    expect(leaving).toEqual([]);
  });
});
