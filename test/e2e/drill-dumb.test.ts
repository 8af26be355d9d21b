/**
 * The drill on a terminal without cursor addressing (TERM=dumb in tmux, docs/cli.md, "Terminals"): a
 * line-by-line dialogue driven through real prompts — step 1's status reads, step 2's failover
 * (choose adopt, confirm) — with each step's checks printed, no cursor code written, and `q`
 * leaving and removing the sandbox.
 */
import { chmodSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TmuxSession, shellQuote } from '../helpers/tmux.js';
import { BIN, assertBuilt } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { leftoversIn, processesMentioning } from '../drill/leftovers.js';

const tmp = makeTempDir('baton-drill-dumb-');
const recording = makeTempDir('baton-drill-dumb-raw-');
let session: TmuxSession | undefined;

/** Any cursor movement, erase, scroll-region or synchronized-output code. */
const CURSOR_CODES = /\u001b\[[0-9;?]*[A-HJKSTfhlsu]|\u001b[78c]/;

beforeAll(() => {
  assertBuilt();
  // PostgreSQL runs as `postgres` and must reach its data dir under this TMPDIR.
  chmodSync(tmp.dir, 0o755);
});

afterAll(async () => {
  await session?.kill();
  tmp.cleanup();
  recording.cleanup();
});

/** At a failover choice: the number of `title`, then the confirmation (yes, or `gate`'s own prompt). */
async function chooseAndConfirm(s: TmuxSession, title: string, gate?: string, also = title): Promise<string> {
  // The prompt must be the last line, unanswered: an earlier choice may still be on screen.
  const waiting = (x: string) =>
    /Choose 1-\d \(Enter = \d, q quits\):\s*$/.test(x.trimEnd() + ' ') &&
    x.includes(title) &&
    // A path in `also` may be wrapped mid-way at the pane's width (the run's TMPDIR is deeper).
    x.replace(/\n\s*/g, '').includes(also);
  const screen = await s.waitFor(waiting, `the choice "${title}"`, 60_000);
  const number = new RegExp(`(\\d)\\. ${title.replace(/[()]/g, '\\$&')}`).exec(screen)?.[1];
  expect(number).toBeDefined();
  await s.type(number!);
  await s.keys('Enter');
  if (gate) return s.waitFor(gate, 'the force gate');
  const confirm = await s.waitFor(
    (x) => /Type yes to confirm, Enter alone goes back:\s*$/.test(x.trimEnd() + ' '),
    `confirming "${title}"`,
  );
  await s.type('yes');
  await s.keys('Enter');
  return confirm;
}

describe('the drill with TERM=dumb', () => {
  it('performs steps 1–3 through prompts (force gate: LOCAL prefix), refuses a wrong rotation count, prints passing checks, writes no cursor code, and q removes the sandbox', async () => {
    session = await TmuxSession.start({
      command: `node ${shellQuote(BIN)} drill`,
      cwd: REPO,
      env: { TERM: 'dumb', TMPDIR: tmp.dir, NO_COLOR: '' },
    });
    const s = session;
    const raw = path.join(recording.dir, 'drill.raw');
    await s.record(raw);

    // Step 1: the operator runs each status read.
    await s.waitFor('`baton status` on ctl-a, q leaves', 'the sandbox to be ready', 90_000);
    await s.keys('Enter');
    await s.waitFor('`baton status` on ctl-b, q leaves', 'the read on ctl-a');
    await s.keys('Enter');

    // Step 2: the failover dialogue on ctl-b; the operator picks adopt by its number.
    let screen = await s.waitFor(
      (x) => x.includes('Choose 1-') && x.includes('Adopt the published authority'),
      'the failover choice',
    );
    const number = /(\d)\. Adopt the published authority/.exec(screen)?.[1];
    expect(number).toBeDefined();
    await s.type(number!);
    await s.keys('Enter');
    screen = await s.waitFor(
      (x) => /Type yes to confirm|Type the first \d+ characters/.test(x),
      'the confirmation',
    );
    const prefix = /deployment id \(([^)]+)\)/.exec(screen)?.[1];
    await s.type(prefix ?? 'yes');
    await s.keys('Enter');

    // Step 3: ctl-b rotates and publishes; ctl-a's force gate asks for the LOCAL prefix.
    await s.waitFor('Press Enter to do it, q leaves the drill', 'step 3', 60_000);
    await s.keys('Enter');
    await chooseAndConfirm(s, "Publish this host's authority");
    screen = await chooseAndConfirm(
      s,
      'Replace the local authority (force)',
      'characters after SHA256:',
      'ctl-a/ca aside',
    );
    const local = /type these\s+(\S{8})/.exec(screen)?.[1];
    expect(local).toBeDefined();
    await s.type('00000000');
    await s.keys('Enter');
    await s.waitFor('not accepted', 'the wrong prefix refused');
    await s.type(local!);
    await s.keys('Enter');

    // Step 4: the rotation asks for the count; a wrong one is refused, then q leaves.
    await s.waitFor('Type the number of credentials to rotate', 'the rotation count', 60_000);
    await s.type('99');
    await s.keys('Enter');
    // The refusal says what was expected.
    await s.waitFor('not accepted: Expected 1, you typed 99', 'the wrong count refused');
    await s.type('q');
    await s.keys('Enter');
    // Left part-way with q: exit 3, the same as q or Ctrl-C on the drill's screen.
    expect(await s.exitCode(60_000)).toBe(3);

    await vi.waitFor(() => expect(processesMentioning(tmp.dir)).toEqual([]), {
      timeout: 15_000,
      interval: 100,
    });
    expect(leftoversIn(tmp.dir)).toEqual([]);
    const written = readFileSync(raw, 'latin1');
    const text = Buffer.from(written, 'latin1').toString('utf8');
    expect(text).toContain('Step 1 of 5');
    expect(text).toContain('Step 2 of 5');
    expect(text).toContain('ctl-b$ baton failover');
    // Checks printed after the steps: some passed, none failed (a ✗ here is the refusals the drill teaches).
    expect(text).toContain('✓ ctl-b adopted the published authority (fingerprints equal)');
    expect(text).toMatch(/checks: [1-9]\d* passed, 0 failed/);
    expect(text).toContain('✓ ctl-a now holds the published authority');
    expect(text).toContain('you left the drill during step 4');
    // The wrong turns are in the summary, as the full-screen drill lists them.
    expect(text).toMatch(/wrong turns \(\d+\), each refused with nothing written:/);
    expect(text.replace(/\s+/g, ' ')).toContain('✗ Expected 1, you typed 99');
    expect(text).toContain('the sandbox was removed');
    expect(written).not.toMatch(CURSOR_CODES);
    // Laid out by baton at word boundaries: no line reached the terminal's edge, where it would wrap mid-word.
    expect(text.split(/\r?\n/).filter((line) => [...line].length > 80)).toEqual([]);
  }, 240_000);
});
