/**
 * The production process runner, watched from outside: the pids of the children each call
 * starts, read from /proc, so a test can read their argv and environment or check they are
 * gone — without a hook in the runner itself.
 */
import { runProcess, type ExecFn } from '../../src/transport/run-process.js';
import { descendantsOf } from './secret-scan.js';

/**
 * `runProcess`, calling `onSpawn` with each process that appeared below this one while the
 * call started its child (the runner spawns before its first await). Calls running at the
 * same moment may see each other's children too: every pid is still one baton started.
 */
export function watchedExec(onSpawn: (pid: number) => void): ExecFn {
  return (file, args, options) => {
    const before = new Set(descendantsOf(process.pid));
    const result = runProcess(file, args, options);
    for (const pid of descendantsOf(process.pid)) if (!before.has(pid)) onSpawn(pid);
    return result;
  };
}
