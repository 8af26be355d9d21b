/**
 * Keys into a real terminal (tmux) that are not lost. A view that has just appeared may not
 * take keys yet — its input hook activates in the effect after the frame that draws it — so
 * under load a key sent the moment the frame shows can vanish. Each helper waits for the
 * screen the key must produce and, only if the screen did NOT change, sends it again (a
 * bounded number of times). Never a fixed sleep.
 */
import type { TmuxSession } from './tmux.js';

/** Presses `key` until `expected` shows (the key is re-sent only while nothing changed). */
export async function pressUntil(
  session: TmuxSession,
  key: string,
  expected: string | ((screen: string) => boolean),
  attempts = 3,
): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    const before = await session.capture();
    await session.keys(key);
    try {
      return await session.waitFor(expected, `${key} to lead to ${String(expected)}`, 8_000);
    } catch (error) {
      // A screen that changed means the key WAS taken: pressing again could act twice, so
      // keep waiting for the result instead.
      if ((await session.capture()) !== before)
        return session.waitFor(expected, `${key} to lead to ${String(expected)}`, 20_000);
      if (attempt >= attempts) throw error;
    }
  }
}

/** Types `text` into a field until `echoed` shows; a half-taken attempt is erased first. */
export async function typeUntilEchoed(
  session: TmuxSession,
  text: string,
  echoed: string,
  attempts = 3,
): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    await session.type(text);
    try {
      return await session.waitFor(echoed, `the field to show ${echoed}`, 8_000);
    } catch (error) {
      if (attempt >= attempts) throw error;
      await session.keys(...Array<string>(text.length + 8).fill('BSpace'));
    }
  }
}
