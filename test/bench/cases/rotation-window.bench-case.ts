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
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseReceipt } from '../../../src/mesh/digest.js';
import type { BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { PROVIDER, startRotationMesh } from '../lib/rotation-mesh.js';
import { summarize } from '../lib/stats.js';

const ROTATIONS = 5;

export const rotationWindowCase: BenchCase = {
  name: 'rotation-window',
  async run(ctx) {
    const { inventory, state, meshDb1, baton, stop } = await startRotationMesh(ctx, 'rotation-window', 2);
    try {
      const windows: number[] = [];
      const receiptDelays: number[] = [];
      await baton(
        'mesh',
        'rotate',
        '--pair',
        `${PROVIDER}:web1-app`,
        '--inventory',
        inventory,
        '--yes',
        '--wait',
        '20',
      ); // creates the role
      for (let i = 0; i < ROTATIONS; i++) {
        ctx.log(`rotation-window: rotation ${i + 1} of ${ROTATIONS}`);
        const { stdout } = await baton(
          'mesh',
          'rotate',
          '--pair',
          `${PROVIDER}:web1-app`,
          '--inventory',
          inventory,
          '--yes',
          '--wait',
          '20',
        );
        const id = /Rotation (\S+):/.exec(stdout)![1]!;
        const records = readFileSync(path.join(state, 'mesh-journal.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
          .filter((r) => r.id === id);
        const applied = records.find((r) => r.phase === 'applied');
        const committed = records.find((r) => r.phase === 'committed');
        const ms = applied?.windows_ms?.[`${PROVIDER}:web1-app`];
        if (typeof ms !== 'number') throw new Error(`rotation ${id} recorded no window: ${stdout}`);
        windows.push(ms);
        const receipt = parseReceipt(
          readFileSync(path.join(meshDb1, 'provides', PROVIDER, '.applied', 'web1_app'), 'utf8'),
        );
        receiptDelays.push(Date.parse(receipt!.applied_at) - Date.parse(committed.at));
      }
      const w = summarize(windows);
      const r = summarize(receiptDelays);
      return {
        figures: [
          figure({
            id: 'rotation.window',
            title: 'Rotation: window per pair, receipt → consumer commit (median of 5 rotations)',
            measured: {
              label: 'mesh rotate --pair, local transport',
              value: w.median,
              unit: 'ms',
              summary: w,
            },
            baseline: {
              label: 'provider commit → receipt (old order: consumer held an unknown password)',
              value: r.median,
              unit: 'ms',
              summary: r,
            },
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
      await stop();
    }
  },
};
