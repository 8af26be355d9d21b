import { useCallback, useEffect, useRef, useState } from 'react';
import { useApp } from 'ink';
import {
  canQuit,
  confirmationText,
  exitCodeOnLeave,
  isTerminal,
  isWorking,
  isWritingFiles,
  type RotationEvent,
  type RotationFlow,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import { countRefusal } from '../../src/app/typed-gate.js';
import type { RevokeRequest } from '../../src/app/rotation-revoke.js';
import type { AppHooks } from '../../src/mesh/reload.js';
import { useTerminalSize } from '../hooks/use-columns.js';
import { useTurnReport } from '../hooks/use-turn-report.js';
import { useFlowState, type Coalesce } from '../hooks/use-flow.js';
import type { KeyHelp } from '../keys.js';
import { HelpOverlay } from '../HelpOverlay.js';
import { holderPage, RotationView } from './RotationView.js';
import { HoldersInFull, lastHolderOffset } from './HolderTable.js';
import { useRotationKeys, type RotationIntent } from './use-rotation-keys.js';

/** Progress events that can arrive by the hundred are batched (with the spinner, under 10 frames a second). */
const BATCHED: ReadonlySet<RotationEvent['type']> = new Set([
  'holder-resolved',
  'staged',
  'committed-step',
  'receipt-seen',
  'receipt-stale',
  'login-tested',
  'consumer-renamed',
]);
export const FRAME_MS = 150;
const COALESCE: Coalesce<RotationEvent> = { events: (event) => BATCHED.has(event.type), frameMs: FRAME_MS };

export interface RotationAppProps {
  /** The rotation on the flow runtime (src/app/flow.ts); the caller owns it and what follows the view. */
  readonly flow: RotationFlow;
  /** Width; read from the terminal, live, when not given. */
  readonly columns?: number;
  readonly color: boolean;
  /** Whether quitting prints the summary (false in the drill, which checks the machines instead). */
  readonly summaryOnQuit?: boolean;
  /** The `mesh resume` to print, with the flags the command was given. */
  readonly resumeCommand?: string;
  /** Called once with the exit code when the operator leaves. */
  readonly onExit: (code: number, state: RotationState) => void;
  /** `--revoke-previous`: shown at the gate. */
  readonly revoke?: RevokeRequest | undefined;
  /** The consumers' `reload:` and the providers' `connect:`: the gate says each pair's test login and reload. */
  readonly app?: AppHooks | undefined;
  /** The `mesh plan` listing every pair of the selection, with the operator's flags. */
  readonly planCommand?: string;
}

/**
 * Wires the rotation flow to the view: renders its state (coalesced, so output over SSH stays
 * small), turns key intents into flow events, and decides when the session may end.
 */
export function RotationApp({
  flow,
  columns: fixedColumns,
  color,
  onExit,
  summaryOnQuit = true,
  resumeCommand,
  planCommand,
  revoke,
  app,
}: RotationAppProps) {
  const { exit } = useApp();
  const state = useFlowState(flow, COALESCE);
  const [offset, setOffset] = useState(0);
  const [tick, setTick] = useState(0);
  const [help, setHelpState] = useState(false);
  // Keys of one read are handled before the next render: `?` then Esc must find the help open.
  const helpNow = useRef(help);
  const setHelp = useCallback((open: boolean) => {
    helpNow.current = open;
    setHelpState(open);
  }, []);
  const [detail, setDetailState] = useState(false);
  // As with help: `d` then Esc in one read must find the holders' view open.
  const detailNow = useRef(detail);
  const setDetail = useCallback((open: boolean) => {
    detailNow.current = open;
    setDetailState(open);
  }, []);
  const [refusal, setRefusal] = useState<string | undefined>(undefined);
  const report = useTurnReport();
  const size = useTerminalSize();
  const columns = fixedColumns ?? size.columns;
  const left = useRef(false);

  const busy = isWorking(state);
  useEffect(() => {
    if (!busy) return undefined;
    const spin = setInterval(() => setTick((t) => t + 1), 350);
    return () => clearInterval(spin);
  }, [busy]);

  const leave = useCallback(
    (code: number) => {
      if (left.current) return;
      left.current = true;
      onExit(code, flow.getState());
      exit();
    },
    [exit, onExit, flow],
  );

  const onIntent = useCallback(
    (intent: RotationIntent) => {
      const current = flow.getState();
      // Esc and ? close the help; they must never also cancel the rotation behind it.
      if (helpNow.current && (intent.type === 'back' || intent.type === 'help')) {
        setHelp(false);
        return;
      }
      // Esc or d closes the holders in full; Enter there confirms nothing (the gate is out of sight).
      if (detailNow.current && intent.type === 'edit') return;
      if (
        detailNow.current &&
        (intent.type === 'back' || intent.type === 'detail' || intent.type === 'confirm')
      ) {
        setDetail(false);
        return;
      }
      switch (intent.type) {
        case 'help':
          setHelp(true);
          return;
        case 'detail':
          setDetail(true);
          return;
        case 'edit': {
          if (current.step !== 'confirming') return;
          const text = intent.edit(current.typed);
          if (text === undefined || text === current.typed) return;
          setRefusal(undefined);
          flow.dispatch({ type: 'typed', text });
          return;
        }
        case 'confirm':
          // A wrong count is said, not swallowed: "expected 3, you typed 4".
          if (current.step === 'confirming')
            setRefusal(countRefusal(current.typed, confirmationText(current.plan)));
          flow.dispatch({ type: 'confirmed' });
          return;
        case 'back':
          if (current.step === 'confirming') report({ kind: 'backed-out' });
          flow.dispatch({ type: 'back' });
          return;
        case 'scroll':
          setOffset((o) =>
            Math.max(
              0,
              Math.min(o + intent.by, lastHolderOffset(current.plan, columns, holderPage(size.rows))),
            ),
          );
          return;
        case 'quit':
          if (canQuit(current)) leave(exitCodeOnLeave(current));
          return;
        case 'interrupt':
          leave(exitCodeOnLeave(current));
          return;
        default: {
          const never: never = intent;
          throw new Error(`unknown intent ${String(never)}`);
        }
      }
    },
    [flow, leave, setHelp, setDetail, size.rows, columns, report],
  );

  useRotationKeys({ isActive: true, typing: state.step === 'confirming', onIntent });
  // The rotation goes on behind the help; the view shows where it stands once help closes.
  if (help) return <HelpOverlay columns={columns} keys={rotationKeys(state)} about={ROTATION_ABOUT} />;
  if (detail) return <HoldersInFull state={state} columns={columns} />;
  return (
    <RotationView
      state={state}
      columns={columns}
      rows={size.rows}
      offset={offset}
      color={color}
      tick={tick}
      refusal={state.step === 'confirming' ? refusal : undefined}
      summaryOnQuit={summaryOnQuit}
      {...(resumeCommand ? { resumeCommand } : {})}
      {...(planCommand ? { planCommand } : {})}
      revoke={revoke}
      app={app}
    />
  );
}

const ROTATION_ABOUT =
  'Every holder must resolve before anything is generated (the gate). Then type the number of credentials and Enter: all of them rotate, or none.';

/** The rotation's own keys at this step: `?` never lists a key the screen ignores. */
function rotationKeys(state: RotationState): readonly KeyHelp[] {
  const scroll: KeyHelp[] = [
    { keys: 'j k  PgUp PgDn', does: 'scroll the holder table' },
    { keys: 'd', does: 'every holder in full, wrapped (Esc back)' },
  ];
  if (state.step === 'confirming') {
    return [
      ...scroll,
      { keys: 'digits', does: 'type the number of credentials' },
      { keys: 'Backspace', does: 'erase (Ctrl-U all, Ctrl-W a word)' },
      { keys: 'Enter', does: 'rotate, once the count matches' },
      { keys: 'Esc', does: 'cancel: nothing is generated (never quits)' },
      { keys: 'Ctrl-C', does: 'quit' },
    ];
  }
  if (isWritingFiles(state))
    return [...scroll, { keys: 'Ctrl-C', does: 'interrupt (the phase under way finishes first)' }];
  if (isTerminal(state))
    return [...scroll, { keys: 'q', does: 'quit and print the summary' }, { keys: 'Ctrl-C', does: 'quit' }];
  return [
    ...scroll,
    { keys: 'Esc', does: 'cancel before anything is generated' },
    { keys: 'q', does: 'quit' },
    { keys: 'Ctrl-C', does: 'quit' },
  ];
}
