/**
 * One pair (pg-main on db1 → web1-app on web1, local transport) against a REAL PostgreSQL (the
 * embedded sandbox) with the real provisioner watching db1: the set-up of the rotation cases.
 * The provisioner's own superuser is seeded into the mesh the way an operator does it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { scramVerifier } from '../../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../../src/sandbox/postgres.js';
import { writeLocalMesh } from '../../mesh/mesh-fixture.js';
import { BIN, type BenchContext } from './context.js';

export const PROVIDER = 'pg-main';
export const PAIR = `${PROVIDER}:web1-app`;
const MESH = '/var/lib/baton/mesh';
const run = promisify(execFile);

export interface RotationMesh {
  readonly root: string;
  readonly inventory: string;
  /** baton's --state-dir (the journal is there). */
  readonly state: string;
  /** db1's mesh directory, where the provisioner reads provider ends and writes receipts. */
  readonly meshDb1: string;
  readonly provisioner: ChildProcess;
  /** The built CLI with this mesh's state dir; rejects on a non-zero exit. */
  baton(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

export async function startRotationMesh(
  ctx: BenchContext,
  name: string,
  intervalSeconds: number,
): Promise<RotationMesh> {
  ctx.log(`${name}: starting the sandbox PostgreSQL`);
  const pg = await startPostgres();
  let provisioner: ChildProcess | undefined;
  try {
    const root = ctx.tempDir(name);
    const superuser = `su_${randomBytes(3).toString('hex')}`;
    const meshDb1 = path.join(root, 'machines/db1', MESH);
    const inventory = writeLocalMesh(root, { webs: 1, provisionerRole: superuser });
    const state = path.join(root, 'state');
    const baton = (...args: string[]) =>
      run(process.execPath, [BIN, '--state-dir', state, ...args], {
        cwd: root,
        env: { ...process.env, NO_COLOR: '1' },
      });
    provisioner = await seedAndWatch(pg, { root, superuser, inventory, meshDb1, intervalSeconds, baton });
    const child = provisioner;
    return {
      root,
      inventory,
      state,
      meshDb1,
      provisioner: child,
      baton,
      stop: async () => {
        child.kill('SIGCONT');
        child.kill('SIGTERM');
        await pg.destroy();
      },
    };
  } catch (error) {
    provisioner?.kill('SIGTERM');
    await pg.destroy();
    throw error;
  }
}

/**
 * The provisioner's superuser made in `pg` (only its verifier is sent), seeded into the mesh the
 * way an operator does it (`baton mesh seed` from a 0600 file under `root`), then the provisioner
 * started watching db1's mesh directory. Returns the provisioner's process.
 */
export async function seedAndWatch(
  pg: PostgresSandbox,
  o: {
    readonly root: string;
    readonly superuser: string;
    readonly inventory: string;
    readonly meshDb1: string;
    readonly intervalSeconds: number;
    readonly baton: (...args: string[]) => Promise<unknown>;
  },
): Promise<ChildProcess> {
  const password = randomBytes(24).toString('base64url');
  const { default: pgClient } = await import('pg');
  const admin = new pgClient.Client({
    host: pg.host,
    port: pg.port,
    database: 'postgres',
    user: pg.superuser,
    password: readFileSync(pg.superuserPasswordFile, 'utf8'),
  });
  await admin.connect();
  await admin.query(
    `CREATE ROLE ${o.superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(password))}'`,
  );
  await admin.end();
  const file = path.join(o.root, 'su.password');
  writeFileSync(file, password, { mode: 0o600 });
  await o.baton(
    'mesh',
    'seed',
    '--pair',
    `${PROVIDER}:provisioner`,
    '--from-file',
    file,
    '--inventory',
    o.inventory,
  );
  mkdirSync(o.meshDb1, { recursive: true });
  return spawn(
    process.execPath,
    [
      BIN,
      'provision',
      'postgres',
      '--mesh-dir',
      o.meshDb1,
      '--provider',
      PROVIDER,
      '--pg-host',
      pg.host,
      '--pg-port',
      String(pg.port),
      '--superuser',
      o.superuser,
      '--watch',
      '--interval',
      String(o.intervalSeconds),
    ],
    { stdio: 'ignore' },
  );
}
