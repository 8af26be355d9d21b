import type { DrillState } from '../../src/app/drill/drill-flow.js';
import { DrillScreen } from './DrillScreen.js';
import { useDrillKeys, type DrillIntent } from './use-drill-keys.js';

export interface DrillRootProps {
  readonly state: DrillState;
  readonly columns: number;
  readonly onIntent: (intent: DrillIntent) => void;
}

/** The drill's own screen with its keys; mounted only while no real view is open. */
export function DrillRoot({ state, columns, onIntent }: DrillRootProps) {
  useDrillKeys(onIntent, { isActive: true });
  return <DrillScreen state={state} columns={columns} />;
}
