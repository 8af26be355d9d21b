/**
 * The drill's caching apps on their consumers' machines (drill-layout.ts `DRILL_APPS`): the app
 * (drill-app-source.ts) and its restart script are installed under the machine's root, and the
 * consumer's `reload:` runs the script. The sandbox's first rotation is what starts each app, as
 * on a real machine: the app cannot start before its credential is delivered, and the reload that
 * follows the delivery starts it. The sandbox stops every app when the drill ends.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { shQuote } from '../transport/remote-scripts.js';
import { DRILL_APP_SOURCE } from './drill-app-source.js';
import {
  appFiles,
  DRILL_APPS,
  DRILL_MESH_DIR,
  DRILL_PROVIDER,
  type DrillApp,
  type DrillMachine,
} from './drill-layout.js';

/** How often an app opens a new connection: often enough that a dead password shows within a step. */
export const APP_INTERVAL_MS = 200;
/** How long a stopped app gets to end its open attempts before it is killed. */
const STOP_GRACE_MS = 3_000;

/**
 * The restart script: stops the app that runs (it removes its pid file once its open attempts
 * ended), starts a new one, and returns only when the new one has read its file (its pid file
 * names it). So the reload's exit 0 means the app took the credential, and a start that fails
 * is said on stderr, which the reload's outcome keeps.
 */
function restartScript(app: DrillApp, root: string, pgModule: string, port: number): string {
  const files = appFiles(app);
  const credential = path.join(root, DRILL_MESH_DIR, 'consumes', DRILL_PROVIDER, app.role);
  const argv = [
    process.execPath,
    files.script,
    pgModule,
    app.consumer,
    credential,
    app.role,
    '127.0.0.1',
    String(port),
    files.log,
    files.pid,
    String(process.pid),
    String(APP_INTERVAL_MS),
  ];
  return [
    `# ${app.consumer}'s restart (its reload: in the drill's inventory), run from the machine's root.`,
    `pid=$(cat ${files.pid} 2>/dev/null)`,
    'if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then',
    `  while [ -e ${files.pid} ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done`,
    'fi',
    `${argv.map(shQuote).join(' ')} </dev/null >>${files.errors} 2>&1 &`,
    'new=$!',
    `while [ "$(cat ${files.pid} 2>/dev/null)" != "$new" ]; do`,
    `  kill -0 "$new" 2>/dev/null || { echo "${app.consumer} ended at start (see ${files.errors})" >&2; exit 1; }`,
    '  sleep 0.05',
    'done',
    '',
  ].join('\n');
}

/** Writes each app and its restart script onto its machine. */
export function installDrillApps(machineRoot: (machine: DrillMachine) => string, port: number): void {
  const pgModule = createRequire(import.meta.url).resolve('pg');
  for (const app of DRILL_APPS) {
    const root = machineRoot(app.machine);
    const files = appFiles(app);
    for (const rel of [files.script, files.pid, files.log])
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true, mode: 0o755 });
    writeFileSync(path.join(root, files.script), DRILL_APP_SOURCE, { mode: 0o644 });
    writeFileSync(path.join(root, files.restart), restartScript(app, root, pgModule, port), { mode: 0o755 });
  }
}

function pidOf(root: string, app: DrillApp): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(root, appFiles(app).pid), 'utf8'));
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function running(root: string, app: DrillApp, pid: number): boolean {
  if (pidOf(root, app) !== pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Ends every app (TERM, then KILL after a grace): what the sandbox's teardown runs. */
export async function stopDrillApps(machineRoot: (machine: DrillMachine) => string): Promise<void> {
  await Promise.all(
    DRILL_APPS.map(async (app) => {
      const root = machineRoot(app.machine);
      const pid = pidOf(root, app);
      if (pid === undefined) return;
      signal(pid, 'SIGTERM');
      const deadline = Date.now() + STOP_GRACE_MS;
      while (running(root, app, pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (running(root, app, pid)) signal(pid, 'SIGKILL');
    }),
  );
}

/** The last resort when the process exits before the teardown ran: no grace. */
export function killDrillApps(machineRoot: (machine: DrillMachine) => string): void {
  for (const app of DRILL_APPS) {
    const pid = pidOf(machineRoot(app.machine), app);
    if (pid !== undefined) signal(pid, 'SIGKILL');
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}
