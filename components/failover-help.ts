/**
 * `?` on each failover screen explains THAT screen: its keys only (a help listing keys the
 * screen ignores teaches the operator to distrust it) and one sentence of what it is for.
 */
import type { FailoverState } from '../src/app/failover-flow.js';
import { CLOSE_KEY, CTRL_C_KEY as CTRL_C, QUIT_KEY, type KeyHelp } from './keys.js';

const HELP: KeyHelp = { keys: '?', does: 'this help (Esc or ? closes it)' };
const TYPING: readonly KeyHelp[] = [
  { keys: 'Backspace', does: 'erase a character' },
  { keys: 'Ctrl-U', does: 'erase the whole field' },
  { keys: 'Ctrl-W', does: 'erase the last word' },
  { keys: 'Enter', does: 'confirm, once the typed text matches' },
  { keys: 'Esc', does: 'back to the choices (never quits)' },
  CTRL_C,
];

function typingGate(state: FailoverState): boolean {
  return (
    state.step === 'confirming-force' ||
    state.step === 'confirming-push' ||
    (state.step === 'confirming' && state.gated)
  );
}

/** This screen's keys; `closes` when q closes the view (the drill's failover task) rather than quitting. */
export function failoverKeys(state: FailoverState, closes = false): readonly KeyHelp[] {
  if (typingGate(state)) return TYPING;
  const QUIT = closes ? CLOSE_KEY : QUIT_KEY;
  switch (state.step) {
    case 'reading':
    case 'acting':
      return [HELP, QUIT, CTRL_C];
    case 'deciding':
      return [
        { keys: '↑ ↓  k j', does: 'move between the allowed actions' },
        { keys: 'Enter', does: 'choose (every write has its own confirm)' },
        { keys: 'r', does: 'read both sides again' },
        HELP,
        QUIT,
        CTRL_C,
      ];
    case 'confirming':
      return [
        { keys: 'Enter', does: 'confirm and write' },
        { keys: 'Esc', does: 'back to the choices (never quits)' },
        HELP,
        QUIT,
        CTRL_C,
      ];
    case 'done':
      return [{ keys: 'r', does: 'read both sides again' }, HELP, QUIT, CTRL_C];
    case 'failed':
      return [{ keys: 'Esc  r', does: 'read again and decide again' }, HELP, QUIT, CTRL_C];
    default:
      return [HELP, QUIT, CTRL_C];
  }
}

export const HELP_ABOUT: Record<FailoverState['step'], string> = {
  reading: "baton is reading the lock, this host's authority and the published one. Nothing is written.",
  deciding:
    'Only the actions the decision table allows for what was read are offered. The cursor starts on one that can be undone.',
  confirming:
    'The last stop before a write. A step that cannot be undone asks for the first 8 characters of the deployment id.',
  'confirming-force':
    'Type the 8 characters marked "type these" (the LOCAL fingerprint, the one set aside). The PUBLISHED one is not accepted.',
  'confirming-push':
    'Type the 8 characters marked "type these" (the PUBLISHED fingerprint, the one the store stops holding). The LOCAL one is not accepted.',
  acting: 'baton takes the lock, reads both sides again and writes only if nothing changed.',
  done: 'What was done, and the re-read that shows how the host stands now.',
  failed: 'What went wrong, where, and what to do. Esc reads again; nothing is repeated blind.',
};
