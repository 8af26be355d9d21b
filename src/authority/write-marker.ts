import { createFileDurably } from '../fs/durable-write.js';
import { MARKER_FILE, MARKER_MODE } from './layout.js';

/** The marker's content: the deployment id, one line. */
export function markerBytes(deployment: string): Uint8Array {
  return new TextEncoder().encode(`${deployment}\n`);
}

/** The deployment id a marker names (its one line, surrounding whitespace ignored). */
export function markerDeployment(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8').trim();
}

/**
 * Creates the marker (never overwrites one). Written LAST by mint and install, and backfilled by
 * the next locked operation on a whole authority that lacks it: without it a later loss of ca/
 * would read as a fresh host, and a fresh host mints — a second authority for one fleet.
 */
export async function writeMarker(stateDir: string, deployment: string): Promise<void> {
  await createFileDurably(stateDir, MARKER_FILE, markerBytes(deployment), MARKER_MODE);
}
