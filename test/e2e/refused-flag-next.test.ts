import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authorityTempDir } from '../helpers/authority.js';
import { runBaton } from '../helpers/run-baton.js';

// A Next is pasted as it stands: one that repeats the value just refused fails the same way.
describe('a malformed --deployment', () => {
  let tmp: { dir: string; cleanup: () => void };
  beforeEach(() => {
    tmp = authorityTempDir('baton-refused-');
  });
  afterEach(() => tmp.cleanup());

  it('is refused with a Next that carries a placeholder for it, not the value refused; nothing is written', async () => {
    const stateDir = path.join(tmp.dir, 'state');
    const store = `file://${path.join(tmp.dir, 'store')}`;
    const run = await runBaton(['--deployment', 'ABC', '--state-dir', stateDir, '--store', store, 'status'], {
      cwd: tmp.dir,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('--deployment "ABC" is not a deployment id');
    const next = /Next: .*/s.exec(run.stderr)?.[0] ?? '';
    expect(next).toContain('--deployment <DEPLOYMENT ID>');
    expect(next).toContain(`--store ${store}`);
    expect(next).toContain('ca show');
    expect(next).not.toContain('ABC');
    expect(readdirSync(tmp.dir)).toEqual([]);
  });
});
