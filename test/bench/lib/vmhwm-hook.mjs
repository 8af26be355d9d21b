// Preloaded with `node --import` when GNU time is missing: prints this process's peak resident
// set (VmHWM) on stderr as it exits, so the memory figure can still be read. The same hook is
// loaded into the baseline, so its own cost is on both sides.
import { readFileSync, writeSync } from 'node:fs';

process.on('exit', () => {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  if (match) writeSync(2, `\nBATON_BENCH_VMHWM ${match[1]}\n`);
});
