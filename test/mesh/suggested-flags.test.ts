/**
 * Suggested commands keep every global and mesh flag the operator gave: a status
 * read with `--timeout 40 --concurrency 3` suggests a rotate with both, and a rotate given
 * `--wait` suggests its next rotate with it; a flag left at its default is not added.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nextStep, renderStep } from '../../src/next-step.js';
import { suggester } from '../../src/suggest-command.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { runBaton } from '../helpers/run-baton.js';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-flags-');
});
afterEach(() => tmp.cleanup());

describe('suggested commands keep the mesh flags given', () => {
  it('each mesh command gets the flags it takes, never one it does not, never twice', () => {
    const s = suggester(
      { stateDir: '/s', inventory: 'mesh.yaml', mesh: { timeout: '40', concurrency: '3', wait: '60' } },
      true,
    );
    expect(renderStep(s, nextStep('mesh rollback rot-1'))).toBe(
      'baton --state-dir /s mesh rollback rot-1 --inventory mesh.yaml --concurrency 3 --timeout 40 --wait 60',
    );
    expect(renderStep(s, nextStep('mesh status'))).toBe(
      'baton --state-dir /s mesh status --inventory mesh.yaml --concurrency 3 --timeout 40',
    );
    expect(renderStep(s, nextStep('mesh seed --pair p:c --from-file <FILE>'))).toContain('--timeout 40');
    expect(renderStep(s, nextStep('mesh seed --pair p:c'))).not.toContain('--concurrency');
    expect(renderStep(s, nextStep('mesh resume rot-1 --wait 5'))).not.toContain('--wait 60');
    expect(renderStep(s, nextStep('sync --push'))).toBe('baton --state-dir /s sync --push');
  });

  it('the built CLI: mesh status --json with --timeout and --concurrency suggests them; without, it does not', async () => {
    for (const m of ['db1', 'web1']) mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true });
    const inventory = path.join(tmp.dir, 'mesh.yaml');
    writeFileSync(
      inventory,
      [
        'machines:',
        '  - { name: db1, address: machines/db1, transport: local }',
        '  - { name: web1, address: machines/web1, transport: local }',
        'providers:',
        '  - { name: pg-main, machine: db1, kind: postgres }',
        'consumers:',
        '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection }',
        '',
      ].join('\n'),
    );
    // A consumer end edited by hand: drifted, and status names the rotate.
    const end = path.join(tmp.dir, 'machines/web1/var/lib/baton/mesh/consumes/pg-main/web1_app');
    mkdirSync(path.dirname(end), { recursive: true });
    writeFileSync(end, 'by-hand', { mode: 0o600 });
    const before = snapshotDir(tmp.dir);
    const status = (...flags: string[]) =>
      runBaton(['mesh', 'status', '--inventory', inventory, '--json', ...flags], {
        cwd: tmp.dir,
        env: { NO_COLOR: '1' },
      });
    const given = await status('--timeout', '40', '--concurrency', '3');
    const steps = (
      JSON.parse(given.stdout) as { pairs: { next_steps: { command: string; args: string[] }[] }[] }
    ).pairs[0]!.next_steps;
    expect(steps[0]!.command).toMatch(
      /mesh rotate --pair pg-main:web1-app --inventory \S+ --concurrency 3 --timeout 40$/,
    );
    expect(steps[0]!.args.slice(-4)).toEqual(['--concurrency', '3', '--timeout', '40']);
    const plain = await status();
    const plainSteps = (JSON.parse(plain.stdout) as { pairs: { next_steps: { command: string }[] }[] })
      .pairs[0]!.next_steps;
    expect(plainSteps[0]!.command).not.toMatch(/--timeout|--concurrency/);
    expect(snapshotDir(tmp.dir)).toEqual(before);
  });
});
