/**
 * Suggested commands as data: the structures the domain builds, and one rendering per output
 * kind — plain (an error printed by the CLI), the TTY view (the status screen) and JSON.
 */
import { describe, expect, it } from 'vitest';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { StatusScreen } from '../components/StatusScreen.js';
import { statusErrorJson, statusJson } from '../src/app/status-json.js';
import { report } from './app/status-fixtures.js';
import { printError } from '../src/commands/context.js';
import { BatonError } from '../src/errors.js';
import {
  nextStep,
  renderSaid,
  renderSaidBare,
  renderStep,
  renderStepSentence,
  replaceElsewhere,
  saidText,
  stepJson,
} from '../src/next-step.js';
import { decide } from '../src/share/decide.js';
import { unsealRefusal } from '../src/share/publish-guards.js';
import { shellWord, suggester } from '../src/suggest-command.js';
import fc from 'fast-check';
import type { Fingerprint } from '../src/pki/fingerprint-type.js';
import type { LocalAuthority, PublishedAuthority } from '../src/share/types.js';

const s = suggester({ deployment: 'd1', stateDir: '/srv/state dir', store: 's3://b/p' }, false);
const LOCAL = `SHA256:${'L'.repeat(43)}` as Fingerprint;

describe('a next step is a structure', () => {
  it('holds the words, the placeholders and the host; the domain builds it without the flags', () => {
    const refusal = unsealRefusal('s3://b/p/authority.json', 'sync --push');
    expect(refusal.said).toEqual([
      expect.stringContaining('Set seal_key_file'),
      { args: ['sync', '--push'] },
      expect.stringContaining('To stop sealing on purpose'),
      {
        args: [
          'sync',
          '--push',
          '--unseal',
          '--confirm',
          { placeholder: 'the word unseal', readFrom: expect.any(String) },
        ],
      },
      expect.any(String),
    ]);
    // The plain text keeps the canonical form, for logs and tests that read `.next`.
    expect(refusal.next).toContain('`baton sync --push --unseal --confirm <the word unseal>`');
    expect(replaceElsewhere()).toMatchObject({
      args: ['sync', '--replace-unreadable', '--confirm', { placeholder: 'ETAG 8' }],
      host: expect.stringContaining('controller'),
    });
  });

  it('renders with the global flags, shell-quoted, placeholders as <…>, and without --state-dir for another host', () => {
    expect(
      renderStep(
        s,
        nextStep('sync --force --confirm', { placeholders: [{ placeholder: 'LOCAL 8', readFrom: 'x' }] }),
      ),
    ).toBe(
      "baton --deployment d1 --state-dir '/srv/state dir' --store s3://b/p sync --force --confirm <LOCAL 8>",
    );
    expect(renderStepSentence(s, replaceElsewhere())).toMatch(
      /^baton --deployment d1 --store s3:\/\/b\/p sync --replace-unreadable --confirm <ETAG 8> \(run it on a controller that holds this deployment's authority\); <ETAG 8>: /,
    );
    expect(stepJson(s, replaceElsewhere())).toEqual({
      command: 'baton --deployment d1 --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>',
      args: [
        '--deployment',
        'd1',
        '--store',
        's3://b/p',
        'sync',
        '--replace-unreadable',
        '--confirm',
        '<ETAG 8>',
      ],
      placeholders: [{ name: 'ETAG 8', read_from: expect.stringContaining('etag') }],
      host: "a controller that holds this deployment's authority",
    });
    expect(saidText(['Run ', nextStep('status'), '.'])).toBe('Run `baton status`.');
  });

  it("JSON's args are the rendered command's words, whatever the flags hold (property)", () => {
    const word = fc.oneof(
      fc.constantFrom('/srv/state dir', "it's", 'a b', '$HOME', 'plain', '--x', ''),
      fc.string({ minLength: 1, maxLength: 12 }).filter((w) => !/[\0\n]/.test(w)),
    );
    fc.assert(
      fc.property(
        fc.record(
          { config: word, deployment: word, stateDir: word, store: word, inventory: word },
          { requiredKeys: [] },
        ),
        fc.boolean(),
        fc.constantFrom('mesh resume r1', 'mesh status', 'sync --push', 'status'),
        (flags, elsewhere, words) => {
          const given = suggester(flags, true);
          const step = nextStep(words, elsewhere ? { host: 'another controller' } : {});
          const json = stepJson(given, step);
          expect(json.command).toBe(['baton', ...json.args.map(shellWord)].join(' '));
        },
      ),
    );
  });
});

describe('rendered once, at the edge', () => {
  it('plain: printError renders the structure with the flags given', () => {
    let out = '';
    const stream = { write: (chunk: string) => ((out += chunk), true) } as unknown as NodeJS.WritableStream;
    printError(stream, unsealRefusal('s3://b/p/authority.json', 'sync --push'), s);
    expect(out).toContain(
      "Next: Set seal_key_file in baton.yaml to the key the other controllers use, then run `baton --deployment d1 --state-dir '/srv/state dir' --store s3://b/p sync --push`.",
    );
    expect(out).toContain(
      "`baton --deployment d1 --state-dir '/srv/state dir' --store s3://b/p sync --push --unseal --confirm <the word unseal>`",
    );
  });

  it('plain line: a sentence of mesh commands renders bare (no backticks), each with the flags and --inventory', () => {
    const mesh = suggester({ stateDir: '/s', inventory: '/etc/mesh.yaml' }, false);
    const said = [
      'finish it: ',
      nextStep('mesh resume r1'),
      ', or roll it back: ',
      nextStep('mesh rollback r1'),
    ];
    expect(renderSaidBare(mesh, said)).toBe(
      'finish it: baton --state-dir /s mesh resume r1 --inventory /etc/mesh.yaml, or roll it back: baton --state-dir /s mesh rollback r1 --inventory /etc/mesh.yaml',
    );
    expect(renderSaid(mesh, said)).toContain(
      '`baton --state-dir /s mesh rollback r1 --inventory /etc/mesh.yaml`',
    );
    // JSON's args are what a script runs after `baton` and the global flags: the same inventory.
    expect(stepJson(mesh, nextStep('mesh resume r1')).args).toEqual([
      '--state-dir',
      '/s',
      'mesh',
      'resume',
      'r1',
      '--inventory',
      '/etc/mesh.yaml',
    ]);
    expect(stepJson(mesh, nextStep('status')).args).toEqual(['--state-dir', '/s', 'status']);
  });

  it('JSON: the verdict and every error carry their steps as objects', () => {
    const local: LocalAuthority = {
      state: 'whole',
      stateDir: '/s',
      unexpected: [],
      markerMissing: false,
      current: { fingerprint: LOCAL, notAfter: new Date(0), notBefore: new Date(0), replaces: undefined },
      previous: undefined,
    } as unknown as LocalAuthority;
    const published: PublishedAuthority = {
      state: 'unreadable',
      location: 's3://b/p/authority.json',
      problem: 'unusable',
      etag: '"0123456789abcdef"',
      error: new BatonError('refused', {
        what: 'The published document was refused: it is not JSON.',
        next: ['Replace it: ', replaceElsewhere(), '.'],
      }),
    };
    const r = { ...report(local, published), verdict: decide(local, published) };
    const json = statusJson(r, s);
    expect(json.published.etag).toBe('0123456789abcdef');
    expect(json.verdict.next_step).toEqual({
      command:
        "baton --deployment d1 --state-dir '/srv/state dir' --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>",
      // The rendered command's words exactly: the global flags (unquoted), then the step's own.
      args: [
        '--deployment',
        'd1',
        '--state-dir',
        '/srv/state dir',
        '--store',
        's3://b/p',
        'sync',
        '--replace-unreadable',
        '--confirm',
        '<ETAG 8>',
      ],
      placeholders: [{ name: 'ETAG 8', read_from: expect.any(String) }],
      host: null,
    });
    expect(json.verdict.next).not.toContain('01234567');
    expect(json.published.error?.next_steps).toEqual([
      expect.objectContaining({
        host: "a controller that holds this deployment's authority",
        args: [
          '--deployment',
          'd1',
          '--store',
          's3://b/p',
          'sync',
          '--replace-unreadable',
          '--confirm',
          '<ETAG 8>',
        ],
      }),
    ]);
    expect(json.published.error?.next).toContain(
      '`baton --deployment d1 --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>` (on a controller',
    );
    expect(
      statusErrorJson(new BatonError('usage', { what: 'x', next: ['Run ', nextStep('status'), '.'] })).error
        .next_steps,
    ).toEqual([expect.objectContaining({ args: ['status'] })]);
  });

  it('TTY view: the status screen shows the step with the flags and the placeholder, never the value', () => {
    const local = {
      state: 'whole',
      stateDir: '/s',
      unexpected: [],
      markerMissing: false,
      current: { fingerprint: LOCAL, notAfter: new Date(0), notBefore: new Date(0), replaces: undefined },
      previous: undefined,
    } as unknown as LocalAuthority;
    const published: PublishedAuthority = {
      state: 'unreadable',
      location: 's3://b/p/authority.json',
      problem: 'unusable',
      etag: '"0123456789abcdef"',
      error: new BatonError('refused', { what: 'it is not JSON.' }),
    };
    const view = render(
      createElement(StatusScreen, {
        state: { step: 'showing', report: report(local, published), refreshing: false },
        columns: 120,
        rows: 60,
        baton: 'baton --store s3://b/p',
        watchSeconds: 5,
      }),
    );
    // A command wider than the line breaks between arguments with a shell continuation (` \`),
    // so the lines paste as one command: join them back before reading it.
    const frame = (view.lastFrame() ?? '').replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ');
    view.unmount();
    expect(frame).toContain('baton --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>');
    expect(frame).toContain('etag 0123456789abcdef');
  });
});
