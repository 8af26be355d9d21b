/**
 * The four confirmation marks in words (src/mesh/confirmed.ts), one table for `mesh status` and
 * the rotation's summary: each step gets a mark and a word, so "applied" is never read as "the
 * app works" when only the files were seen to agree.
 */
import {
  CONFIRM_JSON_NAMES,
  CONFIRM_STEPS,
  type ConfirmState,
  type ConfirmStep,
  type Confirmations,
} from '../mesh/confirmed.js';
import { MARKS, type Mark } from './marks.js';

export const CONFIRM_MARKS: Record<ConfirmState, Mark> = {
  confirmed: MARKS.ok,
  failed: MARKS.refused,
  'not-confirmed': MARKS.action,
  'not-configured': MARKS.info,
  'not-recorded': MARKS.info,
};

const STEP_NAMES: Record<ConfirmStep, string> = {
  file: 'file',
  testLogin: 'test login',
  reload: 'reload',
  sessions: "app's new sessions",
};

/** What a step's state means for that step, in a few words (after its name). */
function stateWords(step: ConfirmStep, state: ConfirmState, during: 'status' | 'rotation'): string {
  switch (state) {
    case 'confirmed':
      return step === 'sessions' ? 'seen on the live login after the move' : 'confirmed';
    case 'failed':
      return step === 'sessions' ? 'FAILED: new sessions on the login its file left' : 'FAILED';
    case 'not-confirmed':
      // The rotation's summary: the preview already said whether connect:/reload: is set.
      if (during === 'rotation' && (step === 'testLogin' || step === 'reload')) return 'none ran';
      return step === 'testLogin'
        ? 'NOT confirmed (connect: is set, but no test login was recorded)'
        : step === 'reload'
          ? 'NOT confirmed (reload: is set, but no run was recorded)'
          : step === 'sessions'
            ? 'NOT seen since the move'
            : 'NOT confirmed (the two ends do not agree now)';
    case 'not-configured':
      return step === 'testLogin' ? 'none (no connect:)' : step === 'reload' ? 'none (no reload:)' : 'none';
    case 'not-recorded':
      return step === 'sessions' && during === 'rotation'
        ? 'not checked by the rotation (mesh status looks for them)'
        : step === 'sessions'
          ? 'not known (no move time)'
          : 'not recorded (the journal holds no mark)';
  }
}

/**
 * `✓ file; ✓ test login; · reload none (no reload:); ! app's new sessions NOT seen since the move`.
 * A record with no marks at all (an older baton, or never rotated) says so once, not three times.
 */
export function confirmedText(c: Confirmations, during: 'status' | 'rotation' = 'status'): string {
  const step = (s: ConfirmStep): string => {
    const words = stateWords(s, c[s], during);
    return `${CONFIRM_MARKS[c[s]].glyph} ${STEP_NAMES[s]}${words === 'confirmed' ? '' : ` ${words}`}`;
  };
  if (c.file === 'not-recorded' && c.testLogin === 'not-recorded' && c.reload === 'not-recorded')
    return `${MARKS.info.glyph} file, test login, reload not recorded (the journal holds no marks for this pair); ${step('sessions')}`;
  return CONFIRM_STEPS.map(step).join('; ');
}

/** `{ "file": "confirmed", "test_login": …, "reload": …, "app_sessions": … }` (docs/mesh-status.md). */
export function confirmedJson(c: Confirmations): Record<string, ConfirmState> {
  return Object.fromEntries(CONFIRM_STEPS.map((step) => [CONFIRM_JSON_NAMES[step], c[step]]));
}
