import { useApp } from 'ink';
import { useMemo, useState } from 'react';
import type { EffectRunner } from '../../src/app/flow.js';
import {
  initialMeshStatusFlow,
  meshStatusFlow,
  type MeshStatusEffect,
  type MeshStatusFlowEvent,
} from '../../src/app/mesh-status-view-state.js';
import { useFlow } from '../hooks/use-flow.js';
import { EXIT_CODES } from '../../src/errors.js';
import { meshStatusExitCode, type PairStatus } from '../../src/mesh/mesh-status.js';
import type { Suggester } from '../../src/suggest-command.js';
import { ColorContext } from '../color-context.js';
import { MeshStatusView, meshStatusLayout } from './MeshStatusView.js';
import { useTerminalSize } from '../hooks/use-columns.js';
import { useMeshStatusKeys } from './use-mesh-status-keys.js';

export interface MeshStatusAppProps {
  readonly selectorText: string;
  readonly machines: number;
  /** Reads every holder; `onMachine` is called as each answers. Never rejects. */
  readonly read: (onMachine: (machine: string, ok: boolean) => void) => Promise<PairStatus[]>;
  /** The terminal's size; read live (resizes included) when not given. Tests pass it. */
  readonly columns?: number;
  readonly rows?: number;
  readonly color: boolean;
  /** Builds the commands the "next" line suggests, with the flags the operator gave. */
  readonly suggester?: Suggester;
  readonly onExit: (code: number) => void;
}

/** Reads on mount and on `r`; quits on `q` with the exit code of what it last read. */
export function MeshStatusApp({
  selectorText,
  machines,
  read,
  columns: fixedColumns,
  rows: fixedRows,
  color,
  suggester,
  onExit,
}: MeshStatusAppProps) {
  const { exit } = useApp();
  const size = useTerminalSize();
  const columns = fixedColumns ?? size.columns;
  const rows = fixedRows ?? size.rows;
  const [progress, setProgress] = useState({ read: 0, total: machines });
  const runner = useMemo<EffectRunner<unknown, MeshStatusFlowEvent, MeshStatusEffect>>(
    () => ({
      async run() {
        setProgress({ read: 0, total: machines });
        return { type: 'read', statuses: await read(() => setProgress((p) => ({ ...p, read: p.read + 1 }))) };
      },
      failed: (_effect, error) => ({
        type: 'read-failed',
        reason: error instanceof Error ? error.message : String(error),
      }),
    }),
    [read, machines],
  );
  const [state, dispatch, current] = useFlow(meshStatusFlow, initialMeshStatusFlow, runner);
  const { visible } = meshStatusLayout(state, columns, rows, suggester, progress);
  useMeshStatusKeys(
    (intent) => {
      // Several keys can arrive in one read: each acts on the state the one before left.
      const now = current();
      if (typeof intent === 'object') {
        const text = intent.edit(now.filter);
        if (text !== undefined && text !== now.filter) dispatch({ type: 'filter-text', text });
        return;
      }
      switch (intent) {
        case 'quit':
          onExit(now.statuses ? meshStatusExitCode(now.statuses) : EXIT_CODES.failed);
          exit();
          return;
        case 'up':
          return dispatch({ type: 'move', by: -1, visible });
        case 'down':
          return dispatch({ type: 'move', by: 1, visible });
        case 'help':
          return dispatch({ type: 'help' });
        case 'back':
          return dispatch({ type: 'back' });
        case 'filter':
          return dispatch({ type: 'start-filter' });
        case 'detail':
          return dispatch({ type: 'detail' });
        case 'select':
          // Enter ends the filter being typed; over the table it opens the row in full, as `d` does.
          return dispatch({ type: now.typingFilter ? 'end-filter' : 'detail' });
        case 'refresh':
          return dispatch({ type: 'refresh' });
        default:
          return undefined;
      }
    },
    { isActive: true, typing: () => current().typingFilter },
  );
  return (
    <ColorContext.Provider value={color}>
      <MeshStatusView
        state={state}
        selectorText={selectorText}
        progress={progress}
        columns={columns}
        rows={rows}
        {...(suggester ? { suggester } : {})}
      />
    </ColorContext.Provider>
  );
}
