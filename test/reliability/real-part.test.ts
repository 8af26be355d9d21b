import { describe, expect, it } from 'vitest';
import { isCI, partPresent } from '../helpers/real-part.js';

describe('a suite that needs a real part', () => {
  it('fails under CI=true when the part is missing, naming it', () => {
    expect(() => partPresent('the ssh suite', 'sshd is not installed', { CI: 'true' })).toThrow(
      /the ssh suite cannot run: sshd is not installed\. Under CI=true/,
    );
  });

  it('runs wherever the part is present, and is only left out off CI', () => {
    expect(partPresent('the ssh suite', undefined, { CI: 'true' })).toBe(true);
    expect(partPresent('the ssh suite', 'sshd is not installed', {})).toBe(false);
    expect(isCI({ CI: 'false' })).toBe(false);
    expect(isCI({ CI: '1' })).toBe(true);
  });
});
