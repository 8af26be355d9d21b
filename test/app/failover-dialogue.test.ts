import { describe, expect, it } from 'vitest';
import { runFailoverDialogue } from '../../src/app/failover-dialogue.js';
import type { FailoverPorts } from '../../src/app/failover-run-effect.js';
import type { StatusReport } from '../../src/app/status-report.js';
import { FP_A, READS } from './status-fixtures.js';

/** Ports over one read; every act is recorded (a test that expects none checks the list is empty). */
function ports(reading: StatusReport) {
  const acts: string[] = [];
  const p: FailoverPorts = {
    read: async () => reading,
    act: async (action) => {
      acts.push(action);
      return { kind: 'first-controller', fingerprint: FP_A, wonRace: true };
    },
  };
  return { p, acts };
}

async function talk(reading: StatusReport, answers: readonly (string | undefined)[]) {
  const { p, acts } = ports(reading);
  const out: string[] = [];
  const queue = [...answers];
  const code = await runFailoverDialogue({
    ports: p,
    baton: 'baton',
    ask: async (question) => {
      out.push(question);
      return queue.length > 0 ? queue.shift() : undefined;
    },
    write: (line) => out.push(line),
  });
  return { code, acts, text: out.join('\n') };
}

describe('the failover as a line dialogue (TERM=dumb, 0×0)', () => {
  it('Enter, Enter, Enter on a fresh host with nothing published leaves, and nothing is acted on', async () => {
    const { code, acts, text } = await talk(READS.firstController(), ['', '', '']);
    expect(acts).toEqual([]);
    expect(code).toBe(3);
    expect(text).toContain('2. Leave it as it is  (default)');
    expect(text).toContain('Nothing was written.');
    expect(text).not.toMatch(/\u001b/);
  });

  it('minting asks for the deployment id: a wrong one is refused with the reason, the right one mints', async () => {
    const { acts, text } = await talk({ ...READS.firstController(), deployment: 'payments-eu' }, [
      '1',
      'paymentz',
      '1',
      'payments',
    ]);
    expect(text).toContain('"paymentz" is not the first 8 characters of the deployment id');
    expect(acts).toEqual(['first-controller']);
  });

  it('at the force gate the PUBLISHED prefix is refused by name, and an empty answer goes back', async () => {
    const reading = READS.leftBehind();
    const published = reading.verdict.kind === 'refuse' ? reading.verdict.published : '';
    const { acts, text } = await talk(reading, ['2', published.slice(7, 15), '', 'q']);
    expect(text).toContain('That is the PUBLISHED fingerprint');
    expect(text).toContain('type these');
    expect(acts).toEqual([]);
  });

  it("keeping this host's authority asks for the PUBLISHED prefix: the LOCAL one is refused by name, the right one acts", async () => {
    const reading = READS.leftBehind();
    if (reading.verdict.kind !== 'refuse') throw new Error('fixture');
    const { local, published } = reading.verdict;
    const { acts, text } = await talk(reading, ['3', local.slice(7, 15), published.slice(7, 15)]);
    expect(text).toContain("3. Keep this host's authority (push over the store's)");
    expect(text).toContain('Nothing on this host changes');
    expect(text).toContain('The same without a screen: baton sync --push --confirm <PUBLISHED 8>');
    expect(text).toContain('That is the LOCAL fingerprint. Type the PUBLISHED one');
    expect(acts).toEqual(['push-over']);
  });

  it('after going back from the force gate the safe choice is the default again, so Enter leaves', async () => {
    const reading = READS.leftBehind();
    const local = reading.verdict.kind === 'refuse' ? reading.verdict.local : '';
    const swapped = [...local.slice(7, 15)]
      .map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()))
      .join('');
    const { acts, code, text } = await talk(reading, ['2', swapped, '', '']);
    expect(text).toMatch(/same letters as the LOCAL fingerprint but not the same case/);
    const menus = text.split('Choose 1-');
    expect(menus).toHaveLength(3);
    // The menu shown after the gate marks the same (safe) choice as the first one did: leave.
    const defaults = text.match(/^ {2}\d\. .*\(default\)$/gm) ?? [];
    expect(defaults).toHaveLength(2);
    expect(defaults[1]).toBe(defaults[0]);
    expect(defaults[0]).toContain('Leave');
    expect(text).toContain('Nothing was written.');
    expect(acts).toEqual([]);
    expect(code).toBe(3);
  });
});
