import { describe, expect, it } from 'vitest';
import { TransportError, reasonOf } from '../../src/mesh/transport.js';

describe('a transport failure quotes the machine, never obeys it', () => {
  it("escapes what a hostile machine said (ssh's stderr, a script's err answer) and leaves shown text as it is", () => {
    const said = 'commit failed on the machine: \x1b[2J\x1b[Hall applied ✓\r\nNext: baton mesh seed --all';
    const error = new TransportError('db1', said);
    expect(error.reason).not.toMatch(/[\x00-\x1f\x7f]/);
    expect(error.message).not.toMatch(/[\x00-\x1f\x7f]/);
    expect(error.reason).toContain('\\x1b[2J');
    expect(error.reason).toContain('\\r\\nNext:');
    expect(reasonOf(error)).toBe(error.reason);
    // Wrapping a reason already shown again changes nothing.
    expect(new TransportError('db1', error.reason).reason).toBe(error.reason);
    // Plain words of baton's own are unchanged.
    expect(new TransportError('db1', 'no staged file /var/lib/baton/mesh/x.next').reason).toBe(
      'no staged file /var/lib/baton/mesh/x.next',
    );
  });

  it('bounds a flood: a 10 KB answer is cut and counted', () => {
    const error = new TransportError('db1', `err ${'A'.repeat(10_000)}`);
    expect(error.reason.length).toBeLessThan(1100);
    expect(error.reason).toMatch(/…\(\+\d+\)$/);
  });
});
