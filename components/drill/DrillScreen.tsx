import { Box, Text } from 'ink';
import { Prose } from '../Prose.js';
import { currentStep, currentTask, type DrillState } from '../../src/app/drill/drill-flow.js';
import { MARKS } from '../../src/app/marks.js';
import { nextStep, renderStep } from '../../src/next-step.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import { useColor } from '../hooks/use-color.js';
import { DrillChecks } from './DrillChecks.js';
import { DrillHelp } from './DrillHelp.js';
import { DrillRail } from './DrillRail.js';
import { DrillSummary } from './DrillSummary.js';
import { StepExplanation } from './StepExplanation.js';
import { Frame } from '../Frame.js';

export interface DrillScreenProps {
  readonly state: DrillState;
  readonly columns: number;
  /** Rows the screen may take (it scrolls inside them); undefined draws it whole. */
  readonly rows?: number;
}

/** The drill's own screens (every phase where no real view is open). Renders state, nothing else. */
export function DrillScreen({ state, columns, rows }: DrillScreenProps) {
  const paint = useColor();
  if (state.phase === 'starting' || state.phase === 'setup-failed') {
    return (
      <Box flexDirection="column" width={columns}>
        <Text bold>baton drill: setting up the sandbox</Text>
        {state.progress.map((line, i) => {
          const last = i === state.progress.length - 1;
          const mark = !last ? MARKS.ok : state.phase === 'setup-failed' ? MARKS.refused : MARKS.busy;
          return (
            <Text key={i} wrap="truncate-end">
              <Text color={paint(mark.color)}>{mark.glyph} </Text>
              {line}
            </Text>
          );
        })}
        {state.phase === 'setup-failed' ? (
          <Box flexDirection="column" marginTop={1}>
            {(state.error ?? []).map((line, i) => (
              // An error's next step may name a command: kept whole, or broken between arguments.
              <Box key={i}>
                {i === 0 ? <Text color={paint(MARKS.refused.color)}>{`${MARKS.refused.glyph} `}</Text> : null}
                <Prose width={Math.max(20, columns - (i === 0 ? 2 : 0))} text={line} commands="baton" />
              </Box>
            ))}
            <Text>q quits.</Text>
          </Box>
        ) : null}
      </Box>
    );
  }

  const step = currentStep(state);
  const body = state.leaving ? (
    <LeavePrompt step={step.number} columns={columns} />
  ) : state.help ? (
    <DrillHelp step={step} columns={columns} />
  ) : (
    <Body state={state} columns={columns} />
  );
  return (
    <Frame
      key={`${state.phase}${state.help ? '-help' : ''}${state.leaving ? '-leaving' : ''}`}
      columns={columns}
      rows={rows}
      headerRows={2}
      header={<DrillRail state={state} columns={columns} />}
      footer={
        <Text wrap="truncate-end">
          {state.leaving
            ? 'q leaves · Esc or Enter stays'
            : state.help
              ? 'Esc or ? closes this · q quits'
              : footerText(state)}
        </Text>
      }
    >
      <Box marginTop={1} flexDirection="column">
        {body}
      </Box>
    </Frame>
  );
}

/** Asked once before leaving: what leaving removes, and the command that comes back here. */
function LeavePrompt({ step, columns }: { readonly step: number; readonly columns: number }) {
  const width = Math.max(20, Math.min(columns, 78) - 2);
  return (
    <Box flexDirection="column">
      <Text bold>Leave the drill?</Text>
      <Prose
        width={width}
        text="The sandbox is removed: its servers are stopped and its files deleted. What you did in this step is not kept."
      />
      <Text> </Text>
      <Text>To come back to this step later:</Text>
      <Box marginLeft={2}>
        <Prose
          width={width - 2}
          text={renderStep(PLAIN_SUGGESTER, nextStep(`drill --step ${step}`))}
          commands="baton"
        />
      </Box>
      <Text> </Text>
      <Text>q leaves · Esc or Enter stays</Text>
    </Box>
  );
}

/** The keys of the phase, kept in the frame's footer so scrolling never hides them. */
function footerText(state: DrillState): string {
  switch (state.phase) {
    case 'intro':
      return 'Enter begins the step · ? explains · q quits';
    case 'task':
      return `Enter: ${currentTask(state).label.replace(/^Press Enter to /, '')} · q quits`;
    case 'check-failed':
      return 'Enter tries this task again · ? explains · q quits';
    case 'task-passed':
      // The next task is named whole in the body: a footer is one line and would cut it.
      return 'Enter: next task · q quits';
    case 'step-passed':
      return 'Enter goes on · q quits';
    case 'summary':
      return 'Enter or q ends the drill and removes the sandbox';
    default:
      return '? explains · q quits';
  }
}

/** The next task's label, as the footer names it (lower-case first word, no "Press Enter to"). */
function nextTaskLabel(state: DrillState): string {
  const next = currentStep(state).tasks[state.task + 1];
  if (!next) return 'the step';
  const label = next.label.replace(/^Press Enter to /, '').replace(/\.$/, '');
  return label.charAt(0).toLowerCase() + label.slice(1);
}

function Body({ state, columns }: Omit<DrillScreenProps, 'rows'>) {
  const paint = useColor();
  const step = currentStep(state);
  switch (state.phase) {
    case 'intro':
      return (
        <Box flexDirection="column">
          <StepExplanation step={step} task={undefined} columns={columns} />
        </Box>
      );
    case 'opening':
    case 'task':
    case 'running':
    case 'checking': {
      const busy =
        state.phase === 'running'
          ? 'performing…'
          : state.phase === 'checking'
            ? 'checking the sandbox…'
            : state.phase === 'opening'
              ? 'noting the sandbox…'
              : undefined;
      return (
        <Box flexDirection="column">
          <StepExplanation step={step} task={state.task} columns={columns} />
          {busy ? (
            <Box marginTop={1}>
              <Text color={paint(MARKS.busy.color)}>{`${MARKS.busy.glyph} ${busy}`}</Text>
            </Box>
          ) : null}
        </Box>
      );
    }
    case 'check-failed':
      return (
        <Checked
          tone="refused"
          title={`Not yet: ${currentTask(state).label}`}
          error={state.error ?? []}
          state={state}
          columns={columns}
        />
      );
    case 'task-passed':
      return (
        <Box flexDirection="column">
          <Checked
            tone="ok"
            title={`Task ${state.task + 1} of ${step.tasks.length} passed every check: ${currentTask(state).label}`}
            error={[]}
            state={state}
            columns={columns}
          />
          <Box marginTop={1}>
            <Prose width={columns} text={`Next (Enter): ${nextTaskLabel(state)}.`} />
          </Box>
        </Box>
      );
    case 'step-passed':
      return (
        <Checked
          tone="ok"
          title={`Step ${step.number} passed every check`}
          error={[]}
          state={state}
          columns={columns}
        />
      );
    case 'summary':
      return <DrillSummary state={state} columns={columns} />;
    case 'starting':
    case 'setup-failed':
      return null;
    default: {
      const never: never = state.phase;
      return never;
    }
  }
}

/** What the checks found after a task: the verdict line, any error, each check, and mesh status. */
function Checked({
  tone,
  title,
  error,
  state,
  columns,
}: {
  readonly tone: 'ok' | 'refused';
  readonly title: string;
  readonly error: readonly string[];
  readonly state: DrillState;
  readonly columns: number;
}) {
  const paint = useColor();
  return (
    <Box flexDirection="column">
      <Text bold>
        <Text color={paint(MARKS[tone].color)}>{MARKS[tone].glyph}</Text>
        {` ${title}`}
      </Text>
      {error.map((line, i) => (
        <Prose key={i} width={columns} text={line} />
      ))}
      <DrillChecks checks={state.checks} columns={columns} />
      <MeshStatusAfter lines={state.meshStatus} columns={columns} />
    </Box>
  );
}

/** `baton mesh status` as read after the rotation, one line each (cut, never wrapped: the screen is 24 rows). */
function MeshStatusAfter({
  lines,
  columns,
}: {
  readonly lines: readonly string[];
  readonly columns: number;
}) {
  if (lines.length === 0) return null;
  return (
    <Box flexDirection="column" marginTop={1} width={columns}>
      <Text bold>$ baton mesh status (after the rotation)</Text>
      {lines.map((line, i) => (
        <Text key={i} wrap="truncate-end">
          {line}
        </Text>
      ))}
    </Box>
  );
}
