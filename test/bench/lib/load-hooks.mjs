// A module load hook (registered by load-register.mjs): reports every module the process loads
// on stderr, so the bench can name what a command pays for at start-up.
import { writeSync } from 'node:fs';

export async function load(url, context, next) {
  const result = await next(url, context);
  writeSync(2, `\nBATON_BENCH_LOAD ${url}\n`);
  return result;
}
