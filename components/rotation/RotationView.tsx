import { Box, Text } from 'ink';
import { MARKS } from '../../src/app/marks.js';
import {
  confirmationText,
  isTerminal,
  progress,
  setOf,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import {
  allOf,
  appliedCount,
  capitalise,
  confirmPrompt,
  gateClosedLines,
  notConfirmedText,
  windowBadge,
  journalFailedLines,
  planHeadline,
  plural,
  progressText,
  rolledBackLines,
} from '../../src/app/rotation-text.js';
import type { PlannedPair, RotationPlan } from '../../src/mesh/rotation-plan.js';
import { nextStep, renderStep } from '../../src/next-step.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import type { RevokeRequest } from '../../src/app/rotation-revoke.js';
import {
  appsFoldedLine,
  foldedPairsLine,
  pairPreviewLines,
  planWords,
  revokeGateLine,
} from '../../src/app/rotation-preview.js';
import { appPreviewByPair } from '../../src/app/rotation-app-text.js';
import type { AppHooks } from '../../src/mesh/reload.js';
import { layoutWithCommands, wrapWords } from '../layout.js';
import { HolderTable, holdersScroll, holderTableHeight } from './HolderTable.js';
import { clip } from './fit.js';
import { Focused, Frame } from '../Frame.js';
import { Prose } from '../Prose.js';

export interface RotationViewProps {
  readonly state: RotationState;
  readonly columns: number;
  /** First visible holder row. */
  readonly offset: number;
  readonly color: boolean;
  readonly tick: number;
  /** Rows the view may take; the holder table pages to fit them. Undefined: 24. */
  readonly rows?: number;
  /** Why the last Enter at the count gate was refused ("expected 3, you typed 4"). */
  readonly refusal?: string | undefined;
  /** `--revoke-previous`: the gate says what will be revoked. */
  readonly revoke?: RevokeRequest | undefined;
  /** Whether quitting prints the summary (the command does; the drill checks the machines instead). */
  readonly summaryOnQuit?: boolean;
  /** The `mesh resume` to print, built by the command with the flags it was given. */
  readonly resumeCommand?: string;
  /** The `mesh plan` that lists every pair of the selection, built the same way (named when the preview folds). */
  readonly planCommand?: string;
  /** The consumers' `reload:` and the providers' `connect:`: each pair's preview says its test login and reload. */
  readonly app?: AppHooks | undefined;
}

/** Rows of the holder table: with the header, panel and keys line the screen stays within 24. */
export const HOLDER_PAGE = 9;

/** Holder rows that fit `rows` with the gate's window, prompt and refusal under them: 7 at 24 rows (never under 3). */
export function holderPage(rows: number | undefined): number {
  return Math.max(3, Math.min(HOLDER_PAGE, (rows ?? 24) - 17));
}
/** At most this many lines of detail (unresolved machines, windows) under the table. */
const DETAIL_LINES = 4;

/** The whole rotation screen: what will change where, the gate, the typed confirm, progress, summary. */
export function RotationView({
  state,
  columns,
  offset,
  color,
  tick,
  rows,
  refusal,
  summaryOnQuit = true,
  resumeCommand,
  planCommand,
  revoke,
  app,
}: RotationViewProps) {
  const resume = resumeCommand ?? renderStep(PLAIN_SUGGESTER, nextStep(`mesh resume ${state.id}`));
  const plan = planCommand ?? renderStep(PLAIN_SUGGESTER, nextStep(planWords(state.plan.selector)));
  const pageSize = holderPage(rows);
  const width = columns - 1;
  const line = (text: string, key?: string, tone?: keyof typeof MARKS, wrap?: boolean, indent = 0) =>
    wrap ? (
      // Wrapped at words, and a `baton mesh resume …` in it kept whole to copy.
      <Box key={key ?? text} marginLeft={indent} width={width - indent}>
        <Prose
          width={width - indent}
          text={text}
          commands="baton"
          {...(color && tone ? { color: MARKS[tone].color } : {})}
        />
      </Box>
    ) : (
      <Box key={key ?? text} width={width}>
        <Text {...(color && tone ? { color: MARKS[tone].color } : {})} wrap="truncate-end">
          {clip(text, width)}
        </Text>
      </Box>
    );
  return (
    <Frame
      key={state.step}
      columns={columns}
      rows={rows ?? 24}
      header={line(`baton mesh rotate · rotation ${state.id}`)}
      footer={line(fittedKeys(keysLine(state, holdersScroll(state.plan, columns, pageSize)), width))}
      scrollKeys={false}
    >
      {line(planHeadline(state.plan))}
      <HolderTable
        state={state}
        columns={columns}
        offset={offset}
        pageSize={pageSize}
        color={color}
        tick={tick}
      />
      <Box flexDirection="column" marginTop={1}>
        {focusGroups(
          panel(state, refusal, summaryOnQuit, resume, revoke, {
            width,
            plan,
            room: previewRoom(state, rows ?? 24, pageSize, width, offset),
            app,
          }),
        ).map((group, g) => {
          const lines = group.lines.map(({ p, i }) => line(p.text, `${i}`, p.tone, p.wrap, p.indent));
          return group.focus ? <Focused key={`focus-${g}`}>{lines}</Focused> : lines;
        })}
      </Box>
    </Frame>
  );
}

interface PanelLine {
  readonly text: string;
  readonly tone?: keyof typeof MARKS;
  /** Wrapped rather than cut: a window is a sentence the operator must be able to read whole. */
  readonly wrap?: boolean;
  /** What the operator acts on (the count prompt and what was typed): the frame keeps it in view. */
  readonly focus?: boolean;
  /** Columns the whole line (each wrapped row) is set in by: a pair's test login and reload under its line. */
  readonly indent?: number;
}

/** Neighbouring lines grouped by whether they are focused, each keeping its index. */
function focusGroups(
  lines: readonly PanelLine[],
): { focus: boolean; lines: { p: PanelLine; i: number }[] }[] {
  const groups: { focus: boolean; lines: { p: PanelLine; i: number }[] }[] = [];
  lines.forEach((p, i) => {
    const last = groups[groups.length - 1];
    if (last && last.focus === Boolean(p.focus)) last.lines.push({ p, i });
    else groups.push({ focus: Boolean(p.focus), lines: [{ p, i }] });
  });
  return groups;
}

function limited(lines: readonly string[], max: number, more: (n: number) => string): string[] {
  return lines.length <= max ? [...lines] : [...lines.slice(0, max - 1), more(lines.length - max + 1)];
}

/** How the gate's preview is laid out: its width, the rows it may take, where the rest is listed. */
interface PreviewFit {
  readonly width: number;
  readonly room: number;
  readonly plan: string;
  readonly app: AppHooks | undefined;
}

/** How far a pair's app lines (its test login, its consumer's reload) are set in under the pair's line. */
const APP_INDENT = 2;

/**
 * Rows left for the gate's preview lines at `rows`: what the header, the holder table, the
 * gate line, the prompt, the field and the keys take comes off first, so the prompt and the
 * field stay on screen. Never under 3 (a tiny terminal scrolls instead).
 */
function previewRoom(
  state: RotationState,
  rows: number,
  pageSize: number,
  width: number,
  offset: number,
): number {
  // The table as drawn: a row whose RECEIVES wraps takes more than one line.
  const table = holderTableHeight(state.plan, width + 1, offset, pageSize);
  const ages = state.plan.ages ? wrapWords(agesText(state.plan, state.plan.ages), width).length : 0;
  const prompt = wrapWords(confirmPrompt(state.plan), width).length;
  // header, headline, margin, gate line, field, keys line, and the row Ink keeps below a frame.
  return Math.max(3, rows - (7 + table + ages + prompt));
}

/**
 * The gate's preview: the revoke line, then each pair's block — its line, and under it its test
 * login and its consumer's reload (the words the plain preview and `mesh plan` print). When the
 * blocks do not all fit `room`: every pair's line and one line naming the `mesh plan` that lists
 * the test logins and reloads; failing that, whole blocks while they fit and the pairs that do
 * not counted by kind on a last line that names the same `mesh plan`.
 */
function previewLines(plan: RotationPlan, revoke: RevokeRequest | undefined, fit: PreviewFit): PanelLine[] {
  const revokeLine = revokeGateLine(plan, revoke);
  const apps = appPreviewByPair(plan, fit.app);
  const blocks: PanelLine[][] = pairPreviewLines(plan, revoke).map((text, i) => [
    { text, wrap: true },
    ...(apps[i] ?? []).map((app) => ({ text: app, wrap: true, indent: APP_INDENT })),
  ]);
  // Counted as Prose lays them out: a command is broken only between arguments, with ` \`.
  const tall = (line: PanelLine) => layoutWithCommands(line.text, fit.width - (line.indent ?? 0)).length;
  const height = (lines: readonly PanelLine[]) => lines.reduce((n, l) => n + tall(l), 0);
  const head: PanelLine[] = revokeLine ? [{ text: revokeLine, wrap: true }] : [];
  const all = [...head, ...blocks.flat()];
  if (height(all) <= fit.room) return all;
  const folded = (rest: readonly PlannedPair[]): PanelLine => ({
    text: foldedPairsLine(rest, revoke, fit.plan),
    wrap: true,
  });
  // Whole blocks while they fit, the rest folded; with no app lines these are the pairs' lines.
  const fill = (units: readonly (readonly PanelLine[])[], room: number): PanelLine[] => {
    const shown = [...head];
    let used = height(shown);
    let listed = 0;
    for (const unit of units) {
      const rest = plan.pairs.slice(listed + 1);
      const foldAfter = rest.length > 0 ? height([folded(rest)]) : 0;
      if (listed > 0 && used + height(unit) + foldAfter > room) break;
      shown.push(...unit);
      used += height(unit);
      listed += 1;
    }
    return listed === units.length ? shown : [...shown, folded(plan.pairs.slice(listed))];
  };
  // Every pair named comes before any pair's detail: when the blocks do not all fit, each pair's
  // line and one line saying where their test logins and reloads are, if that fits — a preview
  // that showed one pair's reload and folded the other pairs hid what is about to be rotated.
  const lines = blocks.map((block) => block.slice(0, 1));
  const appsLine: PanelLine = { text: appsFoldedLine(fit.plan), wrap: true };
  if (fit.app && height([...head, ...lines.flat(), appsLine]) <= fit.room)
    return [...head, ...lines.flat(), appsLine];
  const withApps = fill(blocks, fit.room);
  if (height(withApps) <= fit.room || !fit.app) return withApps;
  // Not even one pair's block fits: the pairs' lines, folded, whose fold line names `mesh plan`.
  return fill(lines, fit.room);
}

function panel(
  state: RotationState,
  refusal: string | undefined,
  summaryOnQuit: boolean,
  resume: string,
  revoke: RevokeRequest | undefined,
  fit: PreviewFit,
): PanelLine[] {
  const p = progress(state);
  switch (state.step) {
    case 'resolving':
      return [
        {
          text: `${MARKS.busy.glyph} resolving ${p.resolved}/${plural(p.holders, 'machine')} — nothing is generated until every one answers`,
          tone: 'busy',
        },
      ];
    case 'gate-closed': {
      const [head, sent, ...rest] = gateClosedLines(state);
      // Wrapped, not cut: "Next: … run the rot…" hid the step the operator needed.
      return [
        { text: `${MARKS.refused.glyph} ${head}`, tone: 'refused', wrap: true },
        { text: sent!, wrap: true },
        ...limited(
          rest.slice(0, -1),
          DETAIL_LINES,
          (n) => `  …and ${n} more (marked ${MARKS.refused.glyph} above)`,
        ).map((text) => ({ text, wrap: true })),
        { text: rest[rest.length - 1]!, wrap: true },
      ];
    }
    case 'confirming':
      return [
        { text: `${MARKS.ok.glyph} Gate open: ${allOf(p.holders, 'machine')} resolved.`, tone: 'ok' },
        // --revoke-previous first, then each pair (its window, or none), within the rows there are.
        ...previewLines(state.plan, revoke, fit),
        ...(state.plan.ages ? [{ text: agesText(state.plan, state.plan.ages), wrap: true }] : []),
        { text: confirmPrompt(state.plan), tone: 'action', focus: true, wrap: true },
        {
          text: `> ${state.typed}${state.typed === confirmationText(state.plan) ? '  (Enter rotates)' : ''}`,
          focus: true,
        },
        ...(refusal
          ? [
              {
                text: `${MARKS.refused.glyph} not accepted: ${refusal}`,
                tone: 'refused' as const,
                wrap: true,
                focus: true,
              },
            ]
          : []),
      ];
    case 'cancelled':
      return [
        {
          text: `${MARKS.info.glyph} Cancelled before anything was generated. Nothing was sent.`,
          tone: 'info',
        },
      ];
    case 'preparing':
    case 'committing':
      return [{ text: `${MARKS.busy.glyph} ${progressText(state)}`, tone: 'busy' }];
    case 'applying':
      return [
        { text: `${MARKS.busy.glyph} ${progressText(state)}`, tone: 'busy' },
        { text: "Provider ends are live; each consumer end follows its provider's receipt.", wrap: true },
      ];
    case 'prepare-failed':
      return [
        {
          text: `${MARKS.refused.glyph} Prepare failed: nothing took effect, the old credentials keep working.`,
          tone: 'refused',
        },
        ...limited(
          state.failures.map((f) => `  ${f.machine}: ${f.reason}`),
          DETAIL_LINES,
          (n) => `  …and ${n} more`,
        ).map((text) => ({ text })),
        state.unstageFailures.length === 0
          ? { text: 'Every staged file was removed.' }
          : {
              text: `Staged files could NOT be removed on ${state.unstageFailures.map((f) => f.machine).join(', ')}.`,
              tone: 'action',
            },
      ];
    case 'commit-failed':
      return [
        {
          text: `${MARKS.refused.glyph} Commit interrupted: ${p.committed}/${p.files} files live, the rest still staged (their old passwords still work).`,
          tone: 'refused',
        },
        ...limited(
          state.failures.map((f) => `  ${f.machine}: ${f.reason}`),
          DETAIL_LINES,
          (n) => `  …and ${n} more`,
        ).map((text) => ({ text })),
        { text: `Next: fix the machine, then run: ${resume}`, tone: 'action', wrap: true },
      ];
    case 'done': {
      const applied = setOf(state.applied);
      const missing = state.plan.pairs.filter((pair) => !applied.has(pair.key));
      return [
        missing.length === 0
          ? {
              text: `${MARKS.ok.glyph} Rotated ${plural(p.pairs, 'credential')}: ${p.files} files replaced on ${plural(p.holders, 'machine')}.`,
              tone: 'ok',
            }
          : {
              text: `${MARKS.action.glyph} ${capitalise(appliedCount(p.applied, p.pairs))}, ${missing.length} pending: run ${resume}`,
              tone: 'action',
              wrap: true,
            },
        // Wrapped: cut at 60 columns it read "window ≤ 51…".
        { text: `  ${progressText(state)}${windowBadge(state)}`, wrap: true },
        ...limited(
          missing.map((pair) => `${MARKS.action.glyph} ${notConfirmedText(pair)}`),
          2,
          (n) => `  …and ${n} more not confirmed`,
        ).map((text) => ({ text, tone: 'action' as const, wrap: true })),
        {
          text: summaryOnQuit
            ? 'q quits and prints the summary: what changed where.'
            : 'q closes the view; the drill then checks every machine.',
        },
      ];
    }
    case 'rolling-back':
      return [
        { text: `${MARKS.busy.glyph} ${progressText(state)}`, tone: 'busy' },
        {
          text: `Rolling back what did not finish: each provider's previous file goes back, each staged consumer end is removed.`,
          wrap: true,
        },
      ];
    case 'rolled-back':
      return [
        ...rolledBackLines(state).map((text, i, all) => ({
          text,
          wrap: true,
          ...(i === 0 || i === all.length - 1 ? { tone: 'action' as const } : {}),
        })),
        {
          text: summaryOnQuit
            ? 'q quits and prints the summary: what changed where.'
            : 'q closes the view; the drill then checks every machine.',
        },
      ];
    case 'unstaging':
      return [
        { text: `${MARKS.refused.glyph} ${state.journal.what}`, tone: 'refused', wrap: true },
        {
          text: `${MARKS.busy.glyph} removing every staged file: without its record nothing could find them again`,
          tone: 'busy',
          wrap: true,
        },
      ];
    case 'journal-failed': {
      const [what, ...rest] = journalFailedLines(state, resume);
      const next = rest.pop()!;
      return [
        { text: `${MARKS.refused.glyph} ${what}`, tone: 'refused', wrap: true },
        ...rest.map((text) => ({ text, wrap: true })),
        { text: next, tone: 'action', wrap: true },
      ];
    }
    default: {
      const never: never = state;
      throw new Error(`unknown step ${String(never)}`);
    }
  }
}

/**
 * The keys line at `width`: whole, or with the least needed words shortened ("digits type" →
 * "digits", "Ctrl-C quit" → "Ctrl-C quits"), never cut mid-hint (`Ctrl-C…` at 60 columns).
 */
function fittedKeys(keys: string, width: number): string {
  const shorter = [
    keys,
    keys.replace('digits type', 'digits'),
    keys.replace('digits type', 'digits').replace(' · ? help', ''),
    // 60 columns: Ctrl-C is said in the help, and the keys' names stand without their verbs.
    keys
      .replace('digits type', 'digits')
      .replace(' · ? help', '')
      .replace(' · Ctrl-C quit', '')
      .replace('j/k scroll', 'j/k')
      .replace('d in full', 'd full'),
  ];
  return shorter.find((k) => [...k].length <= width) ?? keys;
}

function keysLine(state: RotationState, scrolls: boolean): string {
  // `d` in every step: the table cuts STATUS to its column, and `d` shows every holder whole.
  const scroll = `${scrolls ? 'j/k scroll · ' : ''}d in full · `;
  if (state.step === 'confirming')
    return `${scroll}digits type · Enter confirm · Esc cancel · ? help · Ctrl-C quit`;
  if (state.step === 'preparing' || state.step === 'committing')
    return `${scroll}delivering… · Ctrl-C interrupts`;
  if (state.step === 'unstaging') return `${scroll}removing staged files… · Ctrl-C interrupts`;
  if (isTerminal(state)) return `${scroll}? help · q quit`;
  return `${scroll}? help · q quit · Ctrl-C quit`;
}

/** `--older-than`: each pair's age, the first few in the preview (the plain output lists all). */
function agesText(plan: RotationPlan, ages: ReadonlyMap<string, string>): string {
  const items = plan.pairs.map((pair) => `${pair.key} ${ages.get(pair.key) ?? '?'}`);
  return `Ages: ${items.slice(0, 3).join(', ')}${items.length > 3 ? `, …and ${items.length - 3} more` : ''}.`;
}
