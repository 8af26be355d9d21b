import { afterEach, describe, expect, it } from 'vitest';
import {
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
  snapshotLocalAuthority,
  type LocalAuthority,
} from '../../src/authority/index.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { authorityDir, cleanupAll, DEP } from './support.js';

afterEach(cleanupAll);

describe('the unlocked reader racing rotations and retires', () => {
  it('only ever answers a whole authority the host really held, or "changing" — never half, mismatched or a key from another generation', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const held = new Set<Fingerprint>([fingerprint]);
    const answers: LocalAuthority[] = [];
    let writing = true as boolean; // set false by the writer below

    const reader = (async () => {
      while (writing) answers.push(await snapshotLocalAuthority(stateDir, DEP));
    })();
    for (let i = 0; i < 6; i++) {
      const rotated = await rotateAuthority(stateDir, DEP);
      held.add(rotated.current);
      await retireAuthority(stateDir, DEP);
    }
    writing = false;
    await reader;

    expect(answers.length).toBeGreaterThan(0);
    for (const answer of answers) {
      if (answer.state === 'blocked') {
        expect(answer.problem, answer.error.message).toBe('changing');
        continue;
      }
      expect(answer.state).toBe('whole');
      const whole = answer as Extract<LocalAuthority, { state: 'whole' }>;
      expect(held.has(whole.current.fingerprint)).toBe(true);
      if (whole.previous) expect(whole.current.replaces).toBe(whole.previous.fingerprint);
    }
    const final = await readLocalAuthority(stateDir, DEP);
    expect(final).toMatchObject({ state: 'whole', previous: undefined });
  });
});
