/**
 * The mesh status table's state as a reducer: which rows the filter keeps, which is selected,
 * where the window starts, whether help or the filter field is open. Pure, so scrolling and
 * filtering are tested without a terminal; the Ink view only renders it.
 */
import { sortWorstFirst, type PairStatus } from '../mesh/mesh-status.js';
import type { Step } from './flow.js';

export interface MeshStatusViewState {
  readonly statuses: readonly PairStatus[] | undefined;
  /** Why the last reading broke as a whole (each machine's own failure is a row's state instead). */
  readonly failure: string | undefined;
  readonly filter: string;
  readonly typingFilter: boolean;
  readonly help: boolean;
  /**
   * The selected row's every column whole, wrapped (`d` or Enter): at 80 columns the table cuts
   * a long pair or id with `…`, and this is where it is read in full. Esc closes it.
   */
  readonly detail: boolean;
  /** Index into the filtered rows. */
  readonly selected: number;
  /** First filtered row shown. */
  readonly top: number;
}

export type MeshStatusViewEvent =
  | { readonly type: 'read'; readonly statuses: readonly PairStatus[] }
  | { readonly type: 'read-failed'; readonly reason: string }
  | { readonly type: 'reading' }
  | { readonly type: 'move'; readonly by: number; readonly visible: number }
  | { readonly type: 'help' }
  | { readonly type: 'detail' }
  | { readonly type: 'back' }
  | { readonly type: 'start-filter' }
  | { readonly type: 'filter-text'; readonly text: string }
  | { readonly type: 'end-filter' };

export const initialMeshStatusView: MeshStatusViewState = {
  statuses: undefined,
  failure: undefined,
  filter: '',
  typingFilter: false,
  help: false,
  detail: false,
  selected: 0,
  top: 0,
};

/** A row is kept when every word of the filter appears in its provider, consumer, role, machines or state. */
export function filteredRows(state: Pick<MeshStatusViewState, 'statuses' | 'filter'>): PairStatus[] {
  const rows = sortWorstFirst(state.statuses ?? []);
  const words = state.filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return rows;
  return rows.filter((s) => {
    const logins = s.logins
      ? [s.logins.live ?? '', s.logins.other ? `${s.logins.other.login} ${s.logins.other.state}` : '']
      : [];
    const hay = [s.pair.key, s.pair.role, s.pair.providerMachine, s.pair.consumerMachine, s.state, ...logins]
      .join(' ')
      .toLowerCase();
    return words.every((w) => hay.includes(w));
  });
}

function clampWindow(state: MeshStatusViewState, visible: number): MeshStatusViewState {
  const count = filteredRows(state).length;
  const selected = Math.max(0, Math.min(state.selected, count - 1));
  let top = Math.min(state.top, selected);
  if (selected >= top + visible) top = selected - visible + 1;
  top = Math.max(0, Math.min(top, Math.max(0, count - visible)));
  return { ...state, selected, top };
}

export function meshStatusView(state: MeshStatusViewState, event: MeshStatusViewEvent): MeshStatusViewState {
  switch (event.type) {
    case 'read':
      return { ...state, statuses: event.statuses, failure: undefined, selected: 0, top: 0 };
    case 'read-failed':
      return { ...state, statuses: undefined, failure: event.reason };
    case 'reading':
      return { ...state, statuses: undefined, failure: undefined };
    case 'move':
      return clampWindow({ ...state, selected: state.selected + event.by }, event.visible);
    case 'help':
      return { ...state, help: !state.help };
    case 'detail':
      // Only over a row to show; a reading in progress or a failure has none.
      return filteredRows(state).length > 0 ? { ...state, detail: true, help: false } : state;
    case 'back':
      // Esc closes what is open — help, the detail, then the filter — and never quits.
      if (state.help) return { ...state, help: false };
      if (state.detail) return { ...state, detail: false };
      if (state.typingFilter) return { ...state, typingFilter: false };
      return { ...state, filter: '', selected: 0, top: 0 };
    case 'start-filter':
      return { ...state, typingFilter: true, help: false, detail: false };
    case 'filter-text':
      return { ...state, filter: event.text, selected: 0, top: 0 };
    case 'end-filter':
      return { ...state, typingFilter: false };
    default: {
      const never: never = event;
      return never;
    }
  }
}

/** `r`: read again, once a reading (or its failure) is shown; the one effect reads every holder. */
export type MeshStatusFlowEvent = MeshStatusViewEvent | { readonly type: 'refresh' };
export type MeshStatusEffect = { readonly type: 'read' };

export const initialMeshStatusFlow: Step<MeshStatusViewState, MeshStatusEffect> = {
  state: initialMeshStatusView,
  effects: [{ type: 'read' }],
};

/** The view's reducer on the flow runtime (src/app/flow.ts): a refresh while reading is dropped, never queued. */
export function meshStatusFlow(
  state: MeshStatusViewState,
  event: MeshStatusFlowEvent,
): Step<MeshStatusViewState, MeshStatusEffect> {
  if (event.type === 'refresh') {
    if (state.statuses === undefined && state.failure === undefined) return { state, effects: [] };
    return { state: meshStatusView(state, { type: 'reading' }), effects: [{ type: 'read' }] };
  }
  return { state: meshStatusView(state, event), effects: [] };
}
