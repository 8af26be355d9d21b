/**
 * How each consumer's app picks up a new password is said, never assumed (src/mesh/app-reads.ts,
 * docs/inventory.md `reads:`): the built CLI's `mesh plan` and `mesh rotate` refuse, before
 * anything is read or sent, a consumer that says nothing (with the exact line to add) and a single
 * pair whose app reads once with no `reload:` (naming the three ways that work).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseInventory } from '../../src/mesh/inventory.js';
import { readsProblems } from '../../src/mesh/app-reads.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { runBaton } from '../helpers/run-baton.js';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-app-reads-');
  for (const m of ['db1', 'web1']) mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true });
});
afterEach(() => tmp.cleanup());

/** A local mesh whose one consumer has exactly `consumer` (YAML flow fields) after its name and machine. */
function writeMesh(consumer: string): string {
  const file = path.join(tmp.dir, 'mesh.yaml');
  writeFileSync(
    file,
    [
      'machines:',
      '  - { name: db1, address: machines/db1, transport: local }',
      '  - { name: web1, address: machines/web1, transport: local }',
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      `  - { name: web1-app, machine: web1, uses: [pg-main]${consumer} }`,
      '',
    ].join('\n'),
  );
  return file;
}

async function baton(inventory: string, ...args: string[]) {
  return runBaton(['--state-dir', path.join(tmp.dir, 'state'), ...args, '--inventory', inventory], {
    cwd: tmp.dir,
    env: { NO_COLOR: '1' },
  });
}

const COMMANDS: readonly (readonly string[])[] = [
  ['mesh', 'plan', '--pair', 'pg-main:web1-app'],
  ['mesh', 'rotate', '--pair', 'pg-main:web1-app', '--yes'],
];

describe('reads: how each app picks up a new password', () => {
  it.each(COMMANDS)(
    'a consumer that says nothing: %s %s refused at plan (exit 2) with the line to add; nothing read or sent',
    async (...words) => {
      const inventory = writeMesh('');
      const before = snapshotDir(tmp.dir);
      const r = await baton(inventory, ...words);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(
        'The inventory does not say how consumer "web1-app" picks up a new password (reads:).',
      );
      expect(r.stderr).toContain('under consumer "web1-app" add `reads: each-connection`');
      expect(r.stderr).toContain('An inventory written before reads: existed');
      expect(r.stderr).toContain('Nothing was read or sent.');
      expect(r.stdout).toBe('');
      expect(snapshotDir(tmp.dir)).toEqual(before);
      console.log(`unsaid consumer, ${words[1]}: refused at plan (exit ${r.exitCode})`);
    },
  );

  it.each(COMMANDS)(
    'a single pair whose app reads once with no reload: (a pooled app): %s %s refused at plan naming the three ways',
    async (...words) => {
      const inventory = writeMesh(', reads: once');
      const before = snapshotDir(tmp.dir);
      const r = await baton(inventory, ...words);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(
        'Consumer "web1-app" reads its password once (reads: once) on a single pair with no reload:',
      );
      for (const way of [
        '`reads: each-connection`',
        '`reads: once` with `reload:`',
        '`reads: once` on a `credential: alternating` pair',
      ])
        expect(r.stderr).toContain(way);
      expect(r.stderr).toContain('add `reload: <the command that restarts or signals the app>`');
      expect(snapshotDir(tmp.dir)).toEqual(before);
      console.log(`pooled single-pair app without reload, ${words[1]}: refused at plan (exit ${r.exitCode})`);
    },
  );

  it('the three ways pass the plan (exit 0); a consumer that has reload: but says nothing is told `reads: once`', async () => {
    for (const fields of [
      ', reads: each-connection',
      ', reads: once, reload: "true"',
      ', reads: once, credential: alternating',
    ]) {
      const r = await baton(writeMesh(fields), 'mesh', 'plan', '--pair', 'pg-main:web1-app');
      expect(r.exitCode, `${fields}: ${r.stderr}`).toBe(0);
    }
    const inv = parseInventory(
      [
        'machines: [{ name: db1, address: machines/db1, transport: local }, { name: web1, address: machines/web1, transport: local }]',
        'providers: [{ name: pg-main, machine: db1, kind: postgres }]',
        'consumers: [{ name: web1-app, machine: web1, uses: [pg-main], reload: "true" }]',
      ].join('\n'),
      path.join(tmp.dir, 'mesh.yaml'),
    );
    expect(readsProblems(planRotation(inv, { by: 'all' }).pairs, inv)).toEqual([
      { consumer: 'web1-app', kind: 'unsaid', line: 'reads: once' },
    ]);
  });

  it('an unknown reads: value is refused when the inventory loads, naming the field', async () => {
    const r = await baton(writeMesh(', reads: sometimes'), 'mesh', 'status');
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/reads/);
  });
});
