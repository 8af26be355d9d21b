import { nextStep } from '../src/next-step.js';
import { describe, expect, it } from 'vitest';
import { actionCommand, suggest, suggester } from '../src/suggest-command.js';
import { describeVerdict } from '../src/app/status-verdict.js';
import type { Fingerprint } from '../src/pki/fingerprint-type.js';

const FP = `SHA256:${'A'.repeat(43)}` as Fingerprint;
const given = {
  config: '/etc/baton/prod.yaml',
  deployment: 'd1',
  stateDir: '/srv/state dir',
  store: 's3://b/p?endpoint=http://x&path_style=true',
};

describe('the one builder of suggested commands', () => {
  it('keeps every global flag given, quoted for a shell, in front of the subcommand', () => {
    expect(suggest(suggester(given, true), 'sync --push')).toBe(
      "baton --config /etc/baton/prod.yaml --deployment d1 --state-dir '/srv/state dir' --store 's3://b/p?endpoint=http://x&path_style=true' sync --push",
    );
  });

  it('adds --inventory to mesh commands only, and never twice', () => {
    const s = suggester({ inventory: 'fleet/inv.yaml' }, true);
    expect(suggest(s, 'mesh rotate --consumer web1-app')).toBe(
      'baton mesh rotate --consumer web1-app --inventory fleet/inv.yaml',
    );
    expect(suggest(s, 'mesh plan --consumer a --inventory other.yaml')).toBe(
      'baton mesh plan --consumer a --inventory other.yaml',
    );
    expect(suggest(s, 'sync')).toBe('baton sync');
  });

  it('picks sync over failover without a terminal; force then needs its flag and --yes', () => {
    const tty = suggester({ deployment: 'd1' }, true);
    const pipe = suggester({ deployment: 'd1' }, false);
    expect(actionCommand(tty, 'adopt')).toBe('baton --deployment d1 failover');
    expect(actionCommand(pipe, 'adopt')).toBe('baton --deployment d1 sync');
  });

  it('status without a terminal never suggests failover, never the value a step is bound to, and the blocked Next keeps the flags', () => {
    const pipe = suggester({ deployment: 'd1' }, false);
    expect(describeVerdict({ kind: 'first-controller' }, pipe).next).toBe(
      'baton --deployment d1 sync --first-controller',
    );
    expect(describeVerdict({ kind: 'adopt', published: FP, lostMarker: false }, pipe).next).toBe(
      'baton --deployment d1 sync',
    );
    const unrelated = describeVerdict(
      { kind: 'refuse', local: FP, published: FP, lineage: { kind: 'unrelated' }, caDir: '/c' },
      pipe,
    );
    expect(unrelated.next).toContain('baton --deployment d1 sync --force --confirm <LOCAL 8>');
    expect(unrelated.next).toContain('baton --deployment d1 sync --push --confirm <PUBLISHED 8>');
    expect(unrelated.next).not.toContain('AAAAAAAA');
    expect(unrelated.step).toEqual({
      args: [
        'sync',
        '--force',
        '--confirm',
        { placeholder: 'LOCAL 8', readFrom: expect.stringContaining('LOCAL fingerprint status shows') },
      ],
    });
    expect(
      describeVerdict(
        {
          kind: 'blocked',
          why: 'x',
          next: 'Run `baton sync --replace-unreadable`.',
          said: ['Run ', nextStep('sync --replace-unreadable'), '.'],
        },
        pipe,
      ).next,
    ).toBe('Run `baton --deployment d1 sync --replace-unreadable`.');
    expect(
      describeVerdict({ kind: 'adopt', published: FP, lostMarker: false }, 'baton --deployment d1').next,
    ).toBe('baton --deployment d1 failover');
  });
});
