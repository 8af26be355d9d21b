/**
 * The path a force will move ca/ to, as the force gate shows it BEFORE anything moves. The
 * act is given the same instant, so the path on the screen is the path on disk — unless that
 * name is already taken, when the authority layer adds a suffix rather than rename over it.
 */
import path from 'node:path';
import { utcStamp } from '../authority/index.js';

export function supersededDirFor(stateDir: string, at: Date): string {
  return path.join(stateDir, `ca.superseded-${utcStamp(at)}`);
}
