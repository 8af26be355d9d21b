/**
 * Every field a `--json` command prints is in its docs page, and every field the page lists is
 * printed (scripts/docs-json-fields.ts): the objects the code builds from the status fixtures
 * (every verdict, a neighbour, each side blocked or unreadable, an error with a next step) are
 * compared with the page's ```jsonc examples, field by field.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsJsonFields, jsonFieldPaths } from '../../scripts/docs-json-fields.js';
import { statusErrorJson, statusJson } from '../../src/app/status-json.js';
import { failedCommandJson } from '../../src/app/error-json.js';
import { BatonError } from '../../src/errors.js';
import { nextStep, retireStep } from '../../src/next-step.js';
import { REPO } from '../helpers/bundle-script.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { meshStatusJson } from '../../src/app/mesh-status-text.js';
import { provisionerHealthJson } from '../../src/app/provisioner-health-text.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import { PAIR_STATES, pairStatus, type EndReading, type PairStatus } from '../../src/mesh/mesh-status.js';
import { buildProgram } from '../../src/program.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { READS } from '../app/status-fixtures.js';

const page = (name: string) => readFileSync(path.join(REPO, 'docs', name), 'utf8');
const union = (objects: readonly unknown[]) => new Set(objects.flatMap((o) => [...jsonFieldPaths(o)]));
/** Fields in `code` the docs lack, and fields the docs list the code does not print. */
function differences(code: Set<string>, docs: Set<string>) {
  return {
    undocumented: [...code].filter((field) => !docs.has(field)).sort(),
    not_printed: [...docs].filter((field) => !code.has(field)).sort(),
  };
}

/** mesh plan's fields a plan over fresh local machines cannot print: no leftovers, no format change. */
const PLAN_FIELDS_NOT_SHOWN = [
  'leftovers[].pair',
  'leftovers[].rotation',
  'leftovers[].running',
  'leftovers[].what',
  'pairs[].left',
  'pairs[].retire',
  // An auth_file pooler is refused at plan time (src/mesh/poolers.ts): no plan prints its file.
  'poolers[].auth_file',
];
const said = new BatonError('usage', {
  what: 'x',
  next: ['Run ', nextStep('status'), ' or ', retireStep(), '.'],
});

describe('the JSON docs pages list exactly the fields the code prints', () => {
  it('docs/status-json.md: status --json in every state, and its error object', () => {
    const reports = Object.values(READS).map((read) => read());
    const base = READS.firstController();
    const withNeighbour = {
      ...base,
      published: {
        state: 'none' as const,
        location: '/srv/wire/authority.json',
        neighbours: [{ location: '/srv/wier/authority.json', deployment: base.deployment }],
      },
    };
    const code = union([...[...reports, withNeighbour].map((r) => statusJson(r)), statusErrorJson(said)]);
    expect(differences(code, docsJsonFields(page('status-json.md')))).toEqual({
      undocumented: [],
      not_printed: [],
    });
  });

  it('docs/mesh-status.md: mesh status --json with an app, a reload, an alternating pair and the provisioners', () => {
    const pair = planRotation(meshInventory(1), { by: 'all' }).pairs[0]!;
    const digest = secretDigest('the-secret');
    const end: EndReading = { read: true, live: digest, next: undefined, liveModifiedMs: 0 };
    const nowMs = Date.parse('2026-11-30T12:05:00Z');
    const database = {
      found: 'as-set' as const,
      since: '2026-11-30T12:00:00.000Z',
      verifier: `sha256:${'ab'.repeat(32)}`,
    };
    const receipt = { role: pair.role, digest, applied_at: '2026-11-30T12:00:00.000Z', database };
    const applied = pairStatus(
      pair,
      { provider: end, consumer: end, receipt },
      journalHistory([]),
      nowMs,
      undefined,
    );
    const reload = {
      consumer: pair.consumer,
      machine: pair.consumerMachine,
      pairs: [pair.key],
      result: 'failed' as const,
      exitCode: 1,
      durationMs: 240,
      stderr: ['no such file'],
      at: '2026-11-30T11:58:00.000Z',
    };
    const behind: PairStatus = {
      ...applied,
      state: 'app-behind',
      lastRotation: { id: '20261129T102700Z-1a2b3c', outcome: 'applied' },
      resumeId: '20261129T102700Z-1a2b3c',
      unreadable: [{ machine: 'db1', reason: 'timed out' }],
      logins: { live: 'web1_app_a', other: { login: 'web1_app_b', state: 'valid' } },
      app: {
        takes: 'behind',
        detail: 'behind',
        reloadedAt: '2026-11-30T11:58:00.000Z',
        seenAt: '2026-11-30T11:59:00.000Z',
        behind: {
          login: 'web1_app_b',
          sessions: 3,
          newest: '2026-11-30T11:59:00.000Z',
          clients: ['10.0.0.12', null],
        },
        reload,
        newSessions: 'failed',
      },
      confirmed: { file: 'confirmed', testLogin: 'confirmed', reload: 'failed', sessions: 'failed' },
    };
    const health = provisionerHealthJson([
      { state: 'ok', provider: pair.provider, machine: pair.providerMachine },
      {
        state: 'locked-out',
        provider: pair.provider,
        machine: pair.providerMachine,
        detail: 'refused',
        next: ['seed it: ', nextStep(`mesh seed --pair ${pair.key} --from-file`)],
      },
    ]);
    // As src/commands/mesh-status.ts composes it.
    const printed = {
      ...meshStatusJson([behind, applied], 'every pair', nowMs, 86_400_000, 3),
      provisioners: health,
      journal: '/var/lib/baton/mesh-journal.jsonl',
      mesh: 'mesh-3b96948bbc44',
    };
    expect(differences(union([printed]), docsJsonFields(page('mesh-status.md')))).toEqual({
      undocumented: [],
      not_printed: [],
    });
  });

  it('mesh status --help and docs/mesh-status.md name every pair state', () => {
    const mesh = buildProgram(['mesh']).commands[0]!;
    const help = mesh.commands.find((command) => command.name() === 'status')!.description();
    const docs = page('mesh-status.md');
    for (const state of PAIR_STATES) {
      expect(help, state).toContain(state);
      expect(docs, state).toMatch(new RegExp(`\\| \`. ${state}\` \\|`));
    }
  });

  it("docs/cli.md: a failed --json command's object, version --json, and mesh plan --json as the built CLI prints it", async () => {
    assertBuilt();
    const temp = makeTempDir('baton-plan-fields-');
    try {
      for (const machine of ['db1', 'web1'])
        mkdirSync(path.join(temp.dir, 'machines', machine), { recursive: true });
      const inventory = path.join(temp.dir, 'mesh.yaml');
      writeFileSync(
        inventory,
        [
          'machines:',
          '  - { name: db1, address: machines/db1, transport: local }',
          '  - { name: web1, address: machines/web1, transport: local }',
          '  - { name: web2, address: machines/nowhere, transport: local }',
          'providers:',
          '  - { name: pg-main, machine: db1, kind: postgres }',
          'consumers:',
          '  - { name: web1-app, machine: web1, uses: [pg-main], credential: alternating, reads: once }',
          '  - { name: web2-app, machine: web2, uses: [pg-main], reads: each-connection }',
          'poolers:',
          '  - { name: bouncer1, machine: db1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1 }, auth_query: true }',
          '',
        ].join('\n'),
      );
      const run = await runBaton(
        [
          '--state-dir',
          path.join(temp.dir, 'state'),
          'mesh',
          'plan',
          '--provider',
          'pg-main',
          '--inventory',
          inventory,
          '--json',
        ],
        { cwd: temp.dir },
      );
      expect(run.stdout, run.stderr).not.toBe('');
      const code = union([
        { format: 'baton.status/1', ...failedCommandJson(said) },
        { format: 'baton.version/1', version: '0.1.0', commit: null, node: 'v20.20.2' },
        JSON.parse(run.stdout),
      ]);
      expect(differences(code, docsJsonFields(page('cli.md')))).toEqual({
        undocumented: [],
        // mesh plan's fields for machines in other states (a rotation's leftovers, a file format
        // that changed): documented, printed only by a plan over such machines (test/mesh/).
        not_printed: PLAN_FIELDS_NOT_SHOWN,
      });
    } finally {
      temp.cleanup();
    }
  });
});
