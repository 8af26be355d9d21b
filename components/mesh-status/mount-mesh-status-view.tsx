/**
 * Mounts the mesh status table and resolves with the exit code of the last reading. Quitting
 * before the first reading finished exits as "could not read" (1): no answer is not "all well".
 */
import { render } from 'ink';
import { EXIT_CODES } from '../../src/errors.js';
import type { PairStatus } from '../../src/mesh/mesh-status.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import { MeshStatusApp } from './MeshStatusApp.js';

export interface MountMeshStatusOptions {
  readonly plan: RotationPlan;
  readonly read: (onMachine: (machine: string, ok: boolean) => void) => Promise<PairStatus[]>;
  readonly noColor: boolean;
  readonly stdout?: NodeJS.WriteStream;
}

export async function mountMeshStatusView(options: MountMeshStatusOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout;
  let code: number = EXIT_CODES.failed;
  const instance = render(
    <MeshStatusApp
      selectorText={options.plan.selectorText}
      machines={options.plan.holders.length}
      read={options.read}
      columns={stdout.columns || 80}
      rows={stdout.rows || 24}
      color={!options.noColor}
      onExit={(c) => {
        code = c;
      }}
    />,
    { stdout, patchConsole: false },
  );
  await instance.waitUntilExit();
  return code;
}
