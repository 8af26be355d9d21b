/**
 * The drill sandbox's fixed names (its controllers, machines, provider, consumers, mesh dir)
 * and what a started sandbox offers. A leaf for the drill: it imports no drill module, so the
 * sandbox, its mesh set-up, the checks and the runners read one table without a cycle.
 */
import type { ShareContext } from '../share/share-context.js';
import type { Store } from '../store/store.js';
import type { PostgresSandbox } from './postgres.js';
import type { ProvisionerGate } from './provisioner-gate.js';

export type Controller = 'ctl-a' | 'ctl-b';

export const DRILL_MACHINES = ['db1', 'web1', 'web2', 'worker1'] as const;
export type DrillMachine = (typeof DRILL_MACHINES)[number];

export const DRILL_PROVIDER = 'pg-main';
export const DRILL_MESH_DIR = '/var/lib/baton/mesh';
/** web2-app has alternating logins (web2_app_a/_b), so step 4 shows a rotation with no window beside one with. */
export const DRILL_CONSUMERS = [
  { name: 'web1-app', machine: 'web1', role: 'web1_app', credential: 'single' },
  { name: 'web2-app', machine: 'web2', role: 'web2_app', credential: 'alternating' },
  { name: 'worker1-jobs', machine: 'worker1', role: 'worker1_jobs', credential: 'single' },
] as const;

/**
 * The consumers whose app caches its password, as most apps do: it reads its consumer file once,
 * at start, then opens a connection every few hundred ms. Its `reload:` restarts it (a command
 * run on its machine, from the machine's root), so the drill shows a rotation the app follows.
 * Its files, under the machine's root: the app and its restart script in `opt/<consumer>/`,
 * its pid in `run/`, one JSON line per login attempt in `var/log/` (names and results, never
 * a password).
 */
export const DRILL_APPS = [{ consumer: 'web2-app', machine: 'web2', role: 'web2_app' }] as const;
export type DrillApp = (typeof DRILL_APPS)[number];
/** `reload:` of an app's consumer: the restart script, relative to the machine's root (where the local transport runs it). */
export const appReloadCommand = (app: DrillApp): string => `sh opt/${app.consumer}/restart`;
/** `reload_timeout:` of the drill's apps, in seconds: a restart is well under one, so a hung one is said soon. */
export const DRILL_APP_RELOAD_TIMEOUT_S = 10;
/** An app's files, relative to its machine's root. */
export const appFiles = (app: DrillApp) => ({
  script: `opt/${app.consumer}/app.cjs`,
  restart: `opt/${app.consumer}/restart`,
  pid: `run/${app.consumer}.pid`,
  log: `var/log/${app.consumer}.log`,
  errors: `var/log/${app.consumer}.err`,
});

export interface DrillSandbox {
  readonly dir: string;
  readonly deployment: string;
  /** What the status views show and key the last store check by; open nothing from it (`store` is open). */
  readonly storeUrl: string;
  /** Opened with the emulator's keys, in-process. */
  readonly store: Store;
  readonly inventoryPath: string;
  readonly journalDir: string;
  readonly postgres: PostgresSandbox;
  /** The state dir of a controller. */
  stateDir(controller: Controller): string;
  /** What the share operations need, as that controller. */
  share(controller: Controller): ShareContext;
  /** The directory playing a machine's `/`. */
  machineRoot(machine: DrillMachine): string;
  /** A path under a machine's mesh_dir, on this machine's disk. */
  meshPath(machine: DrillMachine, ...parts: string[]): string;
  /** Holds the in-process provisioner so the drill can read a `pending` pair by construction. */
  readonly provisioner: ProvisionerGate;
}
