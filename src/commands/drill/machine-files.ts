/**
 * Every file under each machine's mesh_dir, by digest (never content): what the drill compares
 * before and after a task to prove exactly which holders received something — and, when the
 * gate closed, that nothing was sent anywhere.
 */
import { readdirSync, readFileSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { secretDigest } from '../../mesh/digest.js';
import { SESSIONS_DIR } from '../../mesh/session-record.js';
import { DRILL_MACHINES, type DrillMachine, type DrillSandbox } from '../../sandbox/drill-layout.js';

/** `<machine>:<path under mesh_dir>` → `<mode> <digest>`. */
export type MeshFiles = Readonly<Record<string, string>>;

export function readMeshFiles(sandbox: DrillSandbox): MeshFiles {
  const out: Record<string, string> = {};
  for (const machine of DRILL_MACHINES) {
    for (const [rel, entry] of Object.entries(digestTree(sandbox.meshPath(machine))))
      // The provisioner's session census (.sessions/) follows the apps' logins, not the mesh's
      // deliveries: with web2-app's app running it changes while nothing is sent.
      if (!rel.split(path.sep).includes(SESSIONS_DIR)) out[`${machine}:${rel}`] = entry;
  }
  return out;
}

/** Relative path → `<mode> <digest>` for every file below `root` (a missing root is empty). */
export function digestTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const abs = path.join(dir, name);
      // The provisioner keeps working while the drill looks (it removes a `.prev` once the pair
      // settles): a name that is gone by the time it is read is absent, not a failed check.
      try {
        const st = lstatSync(abs);
        if (st.isDirectory()) walk(abs);
        else
          out[path.relative(root, abs)] =
            `${(st.mode & 0o777).toString(8)} ${st.isFile() ? secretDigest(readFileSync(abs)) : 'not-a-file'}`;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  };
  walk(root);
  return out;
}

/** The keys whose entry differs (added, removed or changed), sorted. */
export function changedFiles(before: MeshFiles, after: MeshFiles): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((key) => before[key] !== after[key]).sort();
}

/** The machines a list of changed keys touches. */
export function machinesOf(keys: readonly string[]): DrillMachine[] {
  return [...new Set(keys.map((key) => key.slice(0, key.indexOf(':')) as DrillMachine))].sort();
}
