/**
 * Rotation window: per pair, the ms from the database taking the new password (the
 * provisioner's receipt) to the consumer end's rename — the time in which new connections that
 * still use the OLD password fail — median of 5 rotations through the built CLI (`baton mesh
 * rotate --yes`, local transport) against a REAL PostgreSQL (the embedded sandbox) and the
 * real provisioner at `--interval 2`. Read from the journal's `windows_ms`, which is what the
 * summary prints.
 * Baseline, same rotations: from the provider ends' commit to the receipt — how long a
 * consumer would have held a password its database did not have yet had its end been
 * committed together with the provider's (the order before docs/mesh-rotation.md step 7).
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseReceipt } from '../../../src/mesh/digest.js';
import { scramVerifier } from '../../../src/provisioner/scram-verifier.js';
import { startPostgres } from '../../../src/sandbox/postgres.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const ROTATIONS = 5;
const PROVIDER = 'pg-main';
const MESH = '/var/lib/baton/mesh';
const run = promisify(execFile);

export const rotationWindowCase: BenchCase = {
  name: 'rotation-window',
  async run(ctx) {
    ctx.log('rotation-window: starting the sandbox PostgreSQL');
    const pg = await startPostgres();
    const root = ctx.tempDir('rotation-window');
    const superuser = `su_${randomBytes(3).toString('hex')}`;
    const meshDb1 = path.join(root, 'machines/db1', MESH);
    let provisioner: ReturnType<typeof spawn> | undefined;
    try {
      for (const m of ['db1', 'web1']) mkdirSync(path.join(root, 'machines', m), { recursive: true });
      const inventory = path.join(root, 'mesh.yaml');
      writeFileSync(inventory, [
        'machines:',
        '  - { name: db1, address: machines/db1, transport: local }',
        '  - { name: web1, address: machines/web1, transport: local }',
        'providers:',
        `  - { name: ${PROVIDER}, machine: db1, kind: postgres }`,
        'consumers:',
        `  - { name: web1-app, machine: web1, uses: [${PROVIDER}] }`,
        `  - { name: provisioner, machine: db1, uses: [${PROVIDER}], role: ${superuser} }`,
        '',
      ].join('\n'));
      const state = path.join(root, 'state');
      const baton = (...args: string[]) => run(process.execPath, [BIN, '--state-dir', state, ...args], { cwd: root, env: { ...process.env, NO_COLOR: '1' } });
      // The provisioner's own superuser, seeded into the mesh (`baton mesh seed`).
      const password = randomBytes(24).toString('base64url');
      const { default: pgClient } = await import('pg');
      const admin = new pgClient.Client({ host: pg.host, port: pg.port, database: 'postgres', user: pg.superuser, password: readFileSync(pg.superuserPasswordFile, 'utf8') });
      await admin.connect();
      await admin.query(`CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(password))}'`);
      await admin.end();
      const file = path.join(root, 'su.password');
      writeFileSync(file, password, { mode: 0o600 });
      await baton('mesh', 'seed', '--pair', `${PROVIDER}:provisioner`, '--from-file', file, '--inventory', inventory);
      provisioner = spawn(process.execPath, [BIN, 'provision', 'postgres', '--mesh-dir', meshDb1, '--provider', PROVIDER, '--pg-host', pg.host,
        '--pg-port', String(pg.port), '--superuser', superuser, '--watch', '--interval', '2'], { stdio: 'ignore' });

      const windows: number[] = [];
      const receiptDelays: number[] = [];
      await baton('mesh', 'rotate', '--pair', `${PROVIDER}:web1-app`, '--inventory', inventory, '--yes', '--wait', '20'); // creates the role
      for (let i = 0; i < ROTATIONS; i++) {
        ctx.log(`rotation-window: rotation ${i + 1} of ${ROTATIONS}`);
        const { stdout } = await baton('mesh', 'rotate', '--pair', `${PROVIDER}:web1-app`, '--inventory', inventory, '--yes', '--wait', '20');
        const id = /Rotation (\S+):/.exec(stdout)![1]!;
        const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.id === id);
        const applied = records.find((r) => r.phase === 'applied');
        const committed = records.find((r) => r.phase === 'committed');
        const ms = applied?.windows_ms?.[`${PROVIDER}:web1-app`];
        if (typeof ms !== 'number') throw new Error(`rotation ${id} recorded no window: ${stdout}`);
        windows.push(ms);
        const receipt = parseReceipt(readFileSync(path.join(meshDb1, 'provides', PROVIDER, '.applied', 'web1_app'), 'utf8'));
        receiptDelays.push(Date.parse(receipt!.applied_at) - Date.parse(committed.at));
      }
      const w = summarize(windows);
      const r = summarize(receiptDelays);
      return {
        figures: [
          figure({
            id: 'rotation.window',
            title: 'Rotation: window per pair, receipt → consumer commit (median of 5 rotations)',
            measured: { label: 'mesh rotate --pair, local transport', value: w.median, unit: 'ms', summary: w },
            baseline: { label: 'provider commit → receipt (old order: consumer held an unknown password)', value: r.median, unit: 'ms', summary: r },
            goal: { kind: 'absolute', max: 100, unit: 'ms' },
            notes: [
              `windows ${windows.map((x) => x.toFixed(0)).join(', ')} ms; real PostgreSQL (embedded), provisioner --interval 2, receipts read every 50 ms`,
              'over ssh add one round trip per pair (the receipt read) to the window',
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      provisioner?.kill('SIGTERM');
      await pg.destroy();
    }
  },
};
