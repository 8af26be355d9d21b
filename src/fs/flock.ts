/**
 * A kernel `flock(LOCK_EX|LOCK_NB)` on a descriptor of its own, retried until `waitMs`. flock
 * belongs to the open file description, so a second holder in THIS process is refused exactly
 * like one in another process, and the kernel releases it when the holder dies: a lock a
 * crashed baton kept for ever would block every operator after it.
 */
import { shown } from '../outside-text.js';

export type FlockResult = 'taken' | 'busy';

type FlockSync = (fd: number, flags: 'exnb' | 'un') => void;

/** The native addon that makes the flock call: npm builds it for the Node.js that installed it. */
export const FLOCK_MODULE = 'fs-ext';

/**
 * fs-ext could not be loaded — built for another Node.js (a tree installed under Node 20 and
 * run on 22), or not built at all. Its own words (ERR_DLOPEN_FAILED) read as a lock the file
 * system refused, and sent an operator to check flock support; this names the module, the
 * Node.js each side was made for, and the rebuild.
 */
export class NativeModuleError extends Error {
  constructor(
    /** What is wrong, a sentence (its module path shown()). */
    readonly what: string,
    /** The way out, a sentence naming the command. */
    readonly next: string,
    options: { cause: unknown },
  ) {
    // Whole in the message too: a caller that only prints the message still names the way out.
    super(`${what} ${next}`, options);
    this.name = 'NativeModuleError';
  }
}

/** NODE_MODULE_VERSION → the Node.js major that uses it (nodejs.org/dist/index.json's `modules`). */
const NODE_OF_ABI: Readonly<Record<string, string>> = {
  '93': '16',
  '108': '18',
  '115': '20',
  '120': '21',
  '127': '22',
  '131': '23',
  '137': '24',
  '141': '25',
};

function nodeOfAbi(abi: string): string {
  const major = NODE_OF_ABI[abi];
  return major === undefined ? `NODE_MODULE_VERSION ${abi}` : `Node.js ${major} (NODE_MODULE_VERSION ${abi})`;
}

/**
 * The words for a failure to load `module`, given Node's error: which module, built for which
 * ABI, running on which, and `npm rebuild` in the tree that holds it. Undefined for an error
 * that is not a failure to load it.
 */
export function nativeModuleProblem(
  error: unknown,
  module = FLOCK_MODULE,
  running: { readonly version: string; readonly modules: string } = {
    version: process.version,
    modules: process.versions.modules,
  },
): NativeModuleError | undefined {
  if (error instanceof NativeModuleError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code !== 'ERR_DLOPEN_FAILED' && code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND')
    return undefined;
  if (code !== 'ERR_DLOPEN_FAILED' && !message.includes(module)) return undefined;
  // Node's words: "The module '<path>'\nwas compiled against a different Node.js version using
  // NODE_MODULE_VERSION 115. This version of Node.js requires NODE_MODULE_VERSION 127."
  const file = /The module '([^']+)'/.exec(message)?.[1];
  const marker = `/node_modules/${module}/`;
  const root = file?.includes(marker) ? file.slice(0, file.indexOf(marker)) : undefined;
  const where = root === undefined ? 'in the directory baton is installed in' : `in ${shown(root)}`;
  const rebuild = `Run \`npm rebuild ${module}\` ${where} with this Node.js (${running.version}), or run baton with the Node.js it was installed with.`;
  const built = /compiled against a different Node\.js version using\s+NODE_MODULE_VERSION (\d+)/.exec(
    message,
  )?.[1];
  const here = `Node.js ${running.version} (NODE_MODULE_VERSION ${running.modules})`;
  if (built !== undefined)
    return new NativeModuleError(
      `The native module ${module} was built for ${nodeOfAbi(built)}, and this is ${here}.`,
      rebuild,
      { cause: error },
    );
  const first = shown(message.split('\n', 1)[0] ?? '');
  return new NativeModuleError(
    code === 'ERR_DLOPEN_FAILED'
      ? `The native module ${module} cannot be loaded on ${here}: ${first}.`
      : `The native module ${module} is not installed (${first}).`,
    code === 'ERR_DLOPEN_FAILED' ? rebuild : `Run \`npm install\` ${where} to install it.`,
    { cause: error },
  );
}

async function flockSyncOf(): Promise<FlockSync> {
  const fsExt = await import('fs-ext').catch((error: unknown) => {
    throw nativeModuleProblem(error) ?? error;
  });
  return (
    (fsExt as Partial<typeof fsExt>).flockSync ??
    (fsExt as unknown as { default: typeof fsExt }).default.flockSync
  );
}

/** Takes the lock on `fd`; 'busy' once `waitMs` has passed; other errors (no flock support) throw. */
export async function flockExclusive(fd: number, waitMs: number, retryMs = 25): Promise<FlockResult> {
  const flockSync = await flockSyncOf();
  const deadline = Date.now() + Math.max(0, waitMs);
  for (;;) {
    if (tryFlock(flockSync, fd)) return 'taken';
    if (Date.now() >= deadline) return 'busy';
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

function tryFlock(flockSync: FlockSync, fd: number): boolean {
  try {
    flockSync(fd, 'exnb');
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw error;
    return false;
  }
}
