import { afterEach, describe, expect, it } from 'vitest';
import { StatusApp } from '../../components/StatusApp.js';
import { statusText } from '../../src/app/status-text.js';
import { suggester } from '../../src/suggest-command.js';
import { READS } from '../app/status-fixtures.js';
import { renderAt, type Rendered } from './render-at.js';

// The TTY status and the plain output name the same command with the same flags: a
// `baton store check` without the --config given would check another config's store.

const mounted: Rendered[] = [];
afterEach(() => {
  for (const view of mounted.splice(0)) view.unmount();
});

/** Words only: the panels' borders and line wraps folded away. */
const flat = (text: string) =>
  text
    .replace(/[│╭╮╰╯─]/g, ' ')
    .replace(/ \\\s+/g, ' ')
    .replace(/\s+/g, ' ');
const FLAGS = { config: '/etc/baton/prod.yaml', stateDir: '/var/lib/baton' };
const COMMAND = 'baton --config /etc/baton/prod.yaml --state-dir /var/lib/baton store check';

describe('the store check the status names', () => {
  it('carries --config on the screen exactly as in the plain output', async () => {
    const report = { ...READS.inSync(), storeCheck: undefined };
    const plain = statusText(report, { ok: '✓', action: '!', refused: '✗' }, suggester(FLAGS, false));
    expect(flat(plain)).toContain(`not checked: run ${COMMAND}`);

    const view = renderAt(
      <StatusApp
        read={async () => report}
        baton={suggester(FLAGS, true).prefix}
        watchSeconds={undefined}
        interactive={false}
        onExit={() => {}}
      />,
      120,
      40,
    );
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('cond. writes'), 'the published panel');
    expect(flat(frame)).toContain(`not checked: run ${COMMAND}`);
  });
});
