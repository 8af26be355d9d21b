/**
 * Roll-back time: a rotation whose provider never confirms within `--wait 1` (the provisioner
 * is stopped with SIGSTOP) is rolled back; the provisioner is resumed the moment the wait ends,
 * and the figure is the ms from that moment (baton printing "rolling back") to the receipt's
 * `applied_at` showing the OLD password's digest again — how long the database holds a
 * password no consumer has after a timed-out rotation. Median of 5, through the built CLI
 * against a REAL PostgreSQL, the same set-up as the rotation window. Baseline, same runs:
 * from the moment the wait ended to baton's exit (the roll-back as the operator waits on it).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseReceipt, secretDigest } from '../../../src/mesh/digest.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { PAIR, PROVIDER, startRotationMesh } from '../lib/rotation-mesh.js';
import { summarize } from '../lib/stats.js';

const ROLLBACKS = 5;

export const rotationRollbackCase: BenchCase = {
  name: 'rotation-rollback',
  async run(ctx) {
    const { inventory, state, meshDb1, baton, provisioner, stop } = await startRotationMesh(
      ctx,
      'rotation-rollback',
      2,
    );
    try {
      await baton('mesh', 'rotate', '--pair', PAIR, '--inventory', inventory, '--yes', '--wait', '20'); // creates the role
      const providerFile = path.join(meshDb1, 'provides', PROVIDER, 'web1_app');
      const receiptFile = path.join(meshDb1, 'provides', PROVIDER, '.applied', 'web1_app');
      const toReceipt: number[] = [];
      const toExit: number[] = [];
      for (let i = 0; i < ROLLBACKS; i++) {
        ctx.log(`rotation-rollback: roll-back ${i + 1} of ${ROLLBACKS}`);
        const old = secretDigest(readFileSync(providerFile, 'utf8'));
        provisioner.kill('SIGSTOP');
        const child = spawn(
          process.execPath,
          [
            BIN,
            '--state-dir',
            state,
            'mesh',
            'rotate',
            '--pair',
            PAIR,
            '--inventory',
            inventory,
            '--yes',
            '--wait',
            '1',
          ],
          {
            env: { ...process.env, NO_COLOR: '1' },
            stdio: ['ignore', 'pipe', 'ignore'],
          },
        );
        let stdout = '';
        let waitEnded: number | undefined;
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString('utf8');
          if (waitEnded === undefined && stdout.includes('rolling back')) {
            waitEnded = Date.now();
            provisioner.kill('SIGCONT');
          }
        });
        const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
        const exited = Date.now();
        provisioner.kill('SIGCONT');
        const receipt = parseReceipt(readFileSync(receiptFile, 'utf8'));
        if (code !== 3 || waitEnded === undefined || receipt?.digest !== old) {
          throw new Error(
            `roll-back ${i + 1} did not end with the old receipt (exit ${code}, receipt ${receipt?.digest ?? 'none'}, old ${old}): ${stdout}`,
          );
        }
        toReceipt.push(Date.parse(receipt.applied_at) - waitEnded);
        toExit.push(exited - waitEnded);
      }
      const r = summarize(toReceipt);
      const e = summarize(toExit);
      return {
        figures: [
          figure({
            id: 'rotation.rollback',
            title: 'Rotation: roll-back, timeout → old receipt (median of 5 roll-backs)',
            measured: {
              label: 'mesh rotate --wait 1, provisioner resumed at the timeout',
              value: r.median,
              unit: 'ms',
              summary: r,
            },
            baseline: {
              label: 'timeout → baton exits (roll-back done)',
              value: e.median,
              unit: 'ms',
              summary: e,
            },
            goal: { kind: 'none' },
            notes: [
              `to old receipt ${toReceipt.map((x) => x.toFixed(0)).join(', ')} ms; to exit ${toExit.map((x) => x.toFixed(0)).join(', ')} ms`,
              'real PostgreSQL (embedded), provisioner --interval 2 stopped (SIGSTOP) during the wait, local transport',
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      await stop();
    }
  },
};
