// `node scripts/warm-app-cache.mjs APP_BUNDLE DIR sync|status` (run twice by the build,
// scripts/build.mjs): runs the app's bundle without a cache in a scratch deployment under DIR.
// `sync` mints and publishes an authority there; `status` then reads it, as a monitor's
// `status --json` does, so V8 compiles that path (commander, config, both reads, the
// fingerprints), and writes the code cache it holds beside the bundle
// (scripts/bundle-runtime.mjs). Only `status` runs in the process that writes the cache:
// minting's code would make every start deserialize more.
import path from 'node:path';
import { runCachedBundle } from './bundle-runtime.mjs';
import { writeAtomically } from './write-atomically.mjs';

const [appFile, dir, step] = process.argv.slice(2);
const flags = ['--deployment', 'b0a710cac4e0b0a710cac4e0b0a710ca', '--state-dir', path.join(dir, 'state'), '--store', `file://${path.join(dir, 'store')}`];
const app = runCachedBundle(appFile, { useCache: false });
await app.exports.main([process.execPath, 'baton', ...flags, ...(step === 'sync' ? ['sync', '--first-controller', '--yes'] : ['status', '--json'])]);
if (process.exitCode !== 0 && process.exitCode !== undefined) throw new Error(`baton ${step} exited ${process.exitCode} while warming the app's code cache`);
if (step === 'status') {
  writeAtomically(`${appFile}.cache`, app.script.createCachedData());
}
