/**
 * The interactive drill in a real terminal at the smallest supported size (tmux, 60×20),
 * driven by real key presses through steps 1–4: the status views, the failover adopt, the
 * rotation, the publish, the refusal, the typed force and a mesh rotation. On every screen what the operator
 * acts on is inside the pane, and no frame is taller than it: nothing scrolls into the
 * history. The screen is polled before every key; text and Enter are sent apart.
 */
import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TmuxSession, shellQuote } from '../helpers/tmux.js';
import { pressUntil, typeUntilEchoed } from '../helpers/tmux-input.js';
import { BIN, assertBuilt } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { leftoversIn, processesMentioning } from '../drill/leftovers.js';

const tmp = makeTempDir('baton-drill-tmux-');
/** The raw recording lives apart: tmux's pipe-pane `cat` names its file, and the sandbox dir must end with no process naming it. */
const recording = makeTempDir('baton-drill-raw-');
let session: TmuxSession | undefined;

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

const COLUMNS = 60;
const ROWS = 20;

/** Lines of the screen that fit the terminal: Ink never writes past its last column. */
function fits(screen: string): boolean {
  return screen.split('\n').every((line) => [...line].length <= COLUMNS);
}

describe(`the interactive drill in tmux (${COLUMNS}×${ROWS})`, () => {
  it('walks steps 1 to 4 with real keys at 60×20, checks each step, and q removes the sandbox', async () => {
    session = await TmuxSession.start({
      command: `node ${shellQuote(BIN)} drill`,
      cwd: REPO,
      env: { TMPDIR: tmp.dir },
      columns: COLUMNS,
      rows: ROWS,
    });
    const s = session;
    /** The screen fits, and no frame so far was taller than the pane (one would have scrolled lines into the history). */
    const inPane = async (screen: string) => {
      expect(fits(screen), screen).toBe(true);
      // Nothing cut that cannot be opened: the rail's title (line 2) is the one line cut on
      // purpose, and ? shows it whole. Key hints, sentences, the task line above an open view
      // and the rotation table's cells wrap or shorten, never end in `…`.
      const cut = screen
        .split('\n')
        .slice(2)
        // (A line opening with the busy mark ends with a progress ellipsis, not a cut.)
        .filter((line) => /\S…\s*$/.test(line) && !/^… /.test(line));
      expect(cut, screen).toEqual([]);
      expect(await s.historySize(), `lines scrolled off the pane; screen:\n${screen}`).toBe(0);
    };
    const raw = path.join(recording.dir, 'drill.raw');
    await s.record(raw);
    let screen = await s.waitFor('Enter begins the step', 'the sandbox to be ready', 90_000);
    expect(screen).toContain('Step 1 of 5: status: ctl-a holds and has published');
    await inPane(screen);

    // ? explains the step; Esc closes the explanation and never quits.
    await s.type('?');
    const help = await s.waitFor('Esc or ? closes this', 'the help overlay');
    await inPane(help);
    // The title the rail cuts at 60 columns, whole.
    expect(help.replace(/[│╭╮╰╯─]/g, ' ').replace(/\s+/g, ' ')).toContain(
      'Step 1: status: ctl-a holds and has published; ctl-b is empty',
    );
    await s.keys('Escape');
    await s.waitFor(
      (x) => x.includes('Enter begins the step') && !x.includes('Esc or ? closes this'),
      'help closed',
    );
    await s.keys('Escape');

    // Step 1: the status view on ctl-a, then on ctl-b. Under load the Enter can land in the
    // Escape's read, where it is dropped by design: pressed again only if nothing changed.
    screen = await pressUntil(
      s,
      'Enter',
      (x) => x.includes('Read the status on ctl-a') && x.includes('in sync:'),
    );
    expect(screen).toContain('PUBLISHED');
    expect(screen).toMatch(/read \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    await inPane(screen);
    await s.type('q');
    // Each task's checks on a screen of their own, before the next task opens.
    screen = await s.waitFor('Task 1 of 2 passed every check', 'the checks of the status on ctl-a');
    expect(screen).toContain('✓ ctl-a holds a whole authority');
    await inPane(screen);
    await s.keys('Enter');
    screen = await s.waitFor(
      (x) => x.includes('Read the status on ctl-b') && x.includes('action needed'),
      'status on ctl-b',
    );
    expect(screen).toContain('fresh: no authority');
    await s.type('q');
    screen = await s.waitFor('Step 1 passed every check', 'the checks of step 1');
    expect(screen).toContain('✓ ctl-b holds nothing (a fresh host)');
    await inPane(screen);

    // Step 2: fail over to ctl-b and adopt.
    await s.keys('Enter');
    await s.waitFor((x) => x.includes('Step 2 of 5') && x.includes('Enter begins the step'), 'step 2');
    await s.keys('Enter');
    await inPane(await s.waitFor('› Adopt the published authority', 'the failover on ctl-b'));
    await s.keys('Enter');
    await inPane(await s.waitFor('Enter confirms', 'the adopt confirmation'));
    await s.keys('Enter');
    await inPane(await s.waitFor('Installed the published authority', 'the adopt'));
    await s.type('q');
    screen = await s.waitFor('Step 2 passed every check', 'the checks of step 2');
    expect(screen).toContain('✓ ctl-a and ctl-b hold the same authority');

    // Step 3: rotate on ctl-b, publish, then ctl-a returns and is refused; force it.
    await s.keys('Enter');
    await s.waitFor((x) => x.includes('Step 3 of 5') && x.includes('Enter begins the step'), 'step 3');
    await s.keys('Enter');
    await s.waitFor('Enter: rotate the authority on ctl-b', 'the rotate action');
    await s.keys('Enter');
    screen = await s.waitFor('Task 1 of 3 passed every check', 'the checks of the rotate');
    expect(screen).toContain('✓ ctl-b holds a new authority');
    await inPane(screen);
    await s.keys('Enter');
    await inPane(await s.waitFor("› Publish this host's authority", 'the failover on ctl-b, ahead'));
    await s.keys('Enter');
    await inPane(await s.waitFor('Enter confirms', 'the publish confirmation'));
    await s.keys('Enter');
    await inPane(await s.waitFor('done: Published', 'the publish'));
    await s.type('q');
    await inPane(await s.waitFor('Task 2 of 3 passed every check', 'the checks of the publish'));
    await s.keys('Enter');
    screen = await s.waitFor(
      (x) => x.includes('left behind') && x.includes('› Leave it as it is'),
      'ctl-a refused',
    );
    expect(screen).toContain('refused');
    await inPane(screen);
    await s.type('j');
    // Below the fold at this size: the menu scrolls to the selection.
    await inPane(await s.waitFor('› Replace the local authority (force)', 'force selected'));
    await s.keys('Enter');
    screen = await s.waitFor('marked "type these"', 'the force gate');
    await inPane(screen);
    // The marks to copy and the field are on screen together.
    const local = /LOCAL\s+SHA256:(\S{8})/.exec(screen)?.[1];
    expect(local).toBeDefined();
    expect(screen).toMatch(/^>/m);
    // A wrong prefix keeps the gate shut; Esc backs out with nothing written.
    const wrong = local!.startsWith('zz') ? 'yyyyyyyy' : 'zzzzzzzz';
    // The field takes keys only from the effect after the frame that draws it: typed until echoed.
    screen = await typeUntilEchoed(s, wrong, `> ${wrong}`);
    expect(screen).toContain('[ Replace ] disabled');
    expect(screen).toContain('type these');
    await inPane(screen);
    await s.keys('Enter');
    screen = await s.waitFor('not accepted', 'the reason the wrong prefix was refused');
    expect(screen.replace(/\s+/g, ' ')).toContain('does not match the LOCAL fingerprint');
    await s.keys('Escape');
    // Back on the safe choice: Enter again would leave, so force is chosen again on purpose.
    screen = await s.waitFor(
      (x) => x.includes('› Leave it as it is') && !x.includes('type these'),
      'back at the choice, on the safe one',
    );
    await inPane(screen);
    const sandbox = readdirSync(tmp.dir).find((name) => name.startsWith('baton-drill-'));
    expect(sandbox).toBeDefined();
    const ctlA = path.join(tmp.dir, sandbox!, 'ctl-a');
    expect(readdirSync(ctlA).filter((name) => name.startsWith('ca.superseded-'))).toEqual([]);
    await s.type('j');
    await s.waitFor('› Replace the local authority (force)', 'force selected again');
    await s.keys('Enter');
    await s.waitFor('marked "type these"', 'the force gate again');
    await typeUntilEchoed(s, local!, `> ${local}`);
    screen = await s.waitFor(
      (x) => x.includes(`> ${local}`) && x.includes('[ Replace ] enabled'),
      'the gate open',
    );
    expect(screen).toContain('type these');
    await inPane(screen);
    await s.keys('Enter');
    await s.waitFor('set aside in', 'the force');
    expect(readdirSync(ctlA).some((name) => name.startsWith('ca.superseded-'))).toBe(true);
    await s.type('q');
    screen = await s.waitFor('Step 3 passed every check', 'the checks of step 3');
    expect(screen).toContain('✓ ctl-a was REFUSED: left behind by a rotation');
    expect(screen).toContain('✓ the old authority was set aside, not deleted');
    await inPane(screen);

    // Step 4: the rotation's gate — its prompt and the typed count in view — and its result,
    // once for web1-app (one role) and once for web2-app (alternating), which opens by itself.
    await s.keys('Enter');
    await s.waitFor((x) => x.includes('Step 4 of 5') && x.includes('Enter begins the step'), 'step 4');
    await s.keys('Enter');
    for (const consumer of ['web1-app', 'web2-app']) {
      screen = await s.waitFor(
        (x) => x.includes('(the number of credentials)') && x.includes(consumer),
        `the rotation gate of ${consumer}`,
        60_000,
      );
      await inPane(screen);
      const count = /Type (\d+) \(the number of credentials\)/.exec(screen)![1]!;
      await typeUntilEchoed(s, count, `> ${count}`);
      screen = await s.waitFor('(Enter rotates)', 'the typed count');
      expect(screen).toContain('(the number of credentials)');
      await inPane(screen);
      await s.keys('Enter');
      await inPane(
        await s.waitFor(
          'q closes the view; the drill then checks',
          `the rotation of ${consumer} done`,
          60_000,
        ),
      );
      await s.type('q');
      if (consumer === 'web1-app') {
        // web1-app's own check screen: the window the step is about, measured.
        screen = await s.waitFor('Task 1 of 2 passed every check', 'the checks of web1-app', 60_000);
        expect(screen.replace(/\s+/g, ' ')).toMatch(/✓ web1-app's window was measured: \d+ ms/);
        await inPane(screen);
        await s.keys('Enter');
      }
    }
    await inPane(await s.waitFor('Step 4 passed every check', 'the checks of step 4', 60_000));

    // q on the drill's own screen asks once (a q that closed a view, typed twice from habit,
    // ended the drill without a word): it names what goes and the --step that comes back.
    await s.type('q');
    screen = await s.waitFor('Leave the drill?', 'the question before leaving');
    expect(screen).toMatch(/^\s*baton drill --step 4\s*$/m);
    expect(screen).toContain('q leaves · Esc or Enter stays');
    await inPane(screen);
    // Esc stays (it never quits), back on the screen it was on.
    await s.keys('Escape');
    await s.waitFor((x) => !x.includes('Leave the drill?') && x.includes('Step 4 passed'), 'staying');
    // The second q of the question leaves; the servers stop and the sandbox goes.
    await s.type('q');
    await s.waitFor('Leave the drill?', 'the question again');
    await s.type('q');
    expect(await s.exitCode(60_000)).toBe(3);
    expect(existsSync(path.join(tmp.dir, sandbox!))).toBe(false);
    await vi.waitFor(() => expect(processesMentioning(tmp.dir)).toEqual([]), {
      timeout: 15_000,
      interval: 100,
    });
    expect(leftoversIn(tmp.dir)).toEqual([]);
    // Every frame was redrawn in place: Ink's full clear (it flickers over SSH and wipes the
    // scrollback) was never written, not even for step 3's tallest views.
    const written = readFileSync(raw, 'latin1');
    expect(written.length).toBeGreaterThan(0);
    expect(written).not.toMatch(/\u001b\[2J|\u001b\[3J|\u001bc/);
  }, 240_000);
});
