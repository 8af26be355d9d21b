/**
 * A lock's holder, as the mesh lock and the provider locks write it and as a second controller
 * reads it back: one schema for both readers, so the refusal, `mesh status` and the leftovers'
 * words name the same holder from the same text.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { holderWords } from '../../src/mesh/leftovers.js';
import { parseLockHolder } from '../../src/mesh/mesh-lock.js';
import { lockHolderText } from '../../src/operations/provider-locks.js';

describe('a lock holder read back', () => {
  it("reads what a provider lock's holder writes, its token left out", () => {
    const holder = parseLockHolder(lockHolderText('mesh rotate --pair pg-main:web1-app'));
    expect(holder).toEqual({
      command: 'mesh rotate --pair pg-main:web1-app',
      pid: process.pid,
      host: os.hostname(),
      since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
    });
  });

  it('keeps a holder whose since is missing or not text, and says it without one', () => {
    const bare = { command: 'mesh seed', pid: 7, host: 'ctl1' };
    expect(parseLockHolder(JSON.stringify(bare))).toEqual(bare);
    expect(parseLockHolder(JSON.stringify({ ...bare, since: 5 }))).toEqual({ ...bare, since: undefined });
    expect(holderWords(JSON.stringify({ ...bare, since: 5 }))).toBe('mesh seed (pid 7 on ctl1)');
    expect(holderWords(JSON.stringify({ ...bare, since: '2026-12-01T10:00:00Z' }))).toBe(
      'mesh seed (pid 7 on ctl1 since 2026-12-01T10:00:00Z)',
    );
  });

  it('reads text that is not a holder as none, and words it as it stands', () => {
    for (const text of ['', 'not json', '{"pid":"7","host":"ctl1","command":"x"}', '{"pid":7,"host":"ctl1"}'])
      expect(parseLockHolder(text)).toBeUndefined();
    expect(holderWords('')).toBe('another baton (it has not said who)');
    expect(holderWords('pid 7')).toBe('another baton (pid 7)');
  });
});
