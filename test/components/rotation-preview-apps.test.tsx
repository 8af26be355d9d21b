/**
 * The rotation gate's preview says, under each pair's line, whether the new credential will be
 * tried from the consumer's machine before it moves (`connect:`) and how the consumer's app
 * will take it (`reload:`) — the words of the plain preview and `mesh plan`
 * (src/app/rotation-app-text.ts), laid out to fit 80×24 and 60×20, whole or folded into a last
 * line naming the `mesh plan` that lists the rest.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RotationView } from '../../components/rotation/RotationView.js';
import type { RotationState } from '../../src/app/rotation-flow.js';
import { appPreviewLines } from '../../src/app/rotation-app-text.js';
import { parseInventory, type Inventory } from '../../src/mesh/inventory.js';
import { appHooks } from '../../src/mesh/reload.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import type { Selector } from '../../src/mesh/selector.js';
import { linesFit, renderAt, type Rendered } from './render-at.js';

const mounted: Rendered[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) m.unmount();
});

/** The drill's mesh: pg-main on db1, web1-app (single), web2-app (alternating, with a reload:), worker1-jobs. */
function inventory(connect: boolean): Inventory {
  return parseInventory(
    [
      'machines:',
      ...['db1', 'web1', 'web2', 'worker1'].map(
        (m) => `  - { name: ${m}, address: ${m}.internal, transport: ssh }`,
      ),
      'providers:',
      `  - { name: pg-main, machine: db1, kind: postgres${connect ? ', connect: { host: db1.internal, port: 5432, database: app }' : ''} }`,
      'consumers:',
      '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main] }',
      "  - { name: web2-app, machine: web2, reads: once, uses: [pg-main], credential: alternating, reload: 'sh opt/web2-app/restart', reload_timeout: 10 }",
      '  - { name: worker1-jobs, machine: worker1, reads: each-connection, uses: [pg-main] }',
      '',
    ].join('\n'),
    '/srv/mesh.yaml',
  );
}

/** Settled as after resolving: the alternating consumer is on login a and moves to b. */
function planOf(inv: Inventory, selector: Selector): RotationPlan {
  const plan = planRotation(inv, selector);
  return {
    ...plan,
    pairs: plan.pairs.map((pair) =>
      pair.credential === 'alternating'
        ? {
            ...pair,
            login: {
              slot: 'b' as const,
              role: `${pair.role}_b`,
              left: { slot: 'a' as const, role: `${pair.role}_a`, providerPath: '/x', receiptPath: '/y' },
            },
          }
        : pair,
    ),
  };
}

function draw(inv: Inventory, plan: RotationPlan, columns: number, rows: number, revoke = false): string {
  const state: RotationState = {
    step: 'confirming',
    id: '20261201T195012Z-1a2b3c',
    plan,
    typed: '',
    resolutions: Object.fromEntries(plan.holders.map((h) => [h.machine, { status: 'resolved' as const }])),
  };
  const view = renderAt(
    <RotationView
      state={state}
      columns={columns}
      rows={rows}
      offset={0}
      color={false}
      tick={0}
      app={appHooks(inv)}
      {...(revoke ? { revoke: { endSessions: false } } : {})}
      planCommand="baton --inventory /srv/mesh.yaml mesh plan --provider pg-main"
    />,
    columns,
    rows,
  );
  mounted.push(view);
  return view.lastFrame();
}

const joined = (frame: string) => frame.replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ');

/** Whether the frame scrolled: a cut with no key to open it (PgUp/PgDn page the holder table here). */
const scrolled = (frame: string) => /more \(\d+–\d+ of \d+ lines\)/.test(frame);

const fitsIn = (frame: string, columns: number, rows: number) => {
  expect(linesFit(frame, columns)).toEqual([]);
  expect(frame.split('\n').length).toBeLessThanOrEqual(rows);
  expect(scrolled(frame), frame).toBe(false);
};

describe("the rotation gate says each pair's test login and reload", () => {
  it('80×24, web2-app alone: its test login (none: no connect:) and its reload under its line, the words of the plain preview', () => {
    const inv = inventory(false);
    const plan = planOf(inv, { by: 'consumer', name: 'web2-app' });
    const frame = draw(inv, plan, 80, 24);
    fitsIn(frame, 80, 24);
    const text = joined(frame);
    expect(text).toContain('pg-main:web2-app: no window, web2_app_a → web2_app_b; web2_app_a keeps working.');
    expect(text).toContain(
      'test login: none — pg-main has no connect:, so the new credential will NOT be tried from web2 before web2-app moves',
    );
    expect(text).toContain(
      'reload web2-app: `sh opt/web2-app/restart` on web2 once its end is committed (at most 10 s)',
    );
    // One piece of code for the words: each line `mesh rotate --yes` and `mesh plan` print is
    // on the screen, the pair's key said once, on the pair's own line.
    const plain = appPreviewLines(plan, appHooks(inv));
    expect(plain).toHaveLength(2);
    for (const line of plain)
      expect(text).toContain(line.trim().replace('test login pg-main:web2-app:', 'test login:'));
    // Set in under the pair's line, every wrapped row.
    const rows = frame.split('\n');
    const at = rows.findIndex((row) => row.includes('test login:'));
    expect(rows.slice(at, at + 4).every((row) => row.startsWith('  '))).toBe(true);
  });

  it('with connect: the test login names the login, the address and the machine it is tried from', () => {
    const inv = inventory(true);
    for (const [columns, rows] of [
      [80, 24],
      [60, 20],
    ] as const) {
      const frame = draw(inv, planOf(inv, { by: 'consumer', name: 'web2-app' }), columns, rows);
      fitsIn(frame, columns, rows);
      expect(joined(frame)).toContain(
        'test login: as web2_app_b to db1.internal:5432/app, from web2, before web2-app moves; refused = not moved',
      );
    }
  });

  it('60×20: web2-app fits whole; web1-app, whose window is a long sentence, keeps its line and names where its test login and reload are', () => {
    const inv = inventory(false);
    const two = joined(draw(inv, planOf(inv, { by: 'consumer', name: 'web2-app' }), 60, 20));
    expect(two).toContain('test login: none — pg-main has no connect:');
    expect(two).toContain('reload web2-app: `sh opt/web2-app/restart` on web2');
    const frame = draw(inv, planOf(inv, { by: 'consumer', name: 'web1-app' }), 60, 20);
    fitsIn(frame, 60, 20);
    const text = joined(frame);
    expect(text).toContain(
      "pg-main:web1-app: window from pg-main applying the new password for web1_app until web1-app's file is replaced",
    );
    expect(text).not.toContain('test login:');
    expect(text).toContain(
      "Each pair's test login (connect:) and reload (reload:) are listed by baton --inventory /srv/mesh.yaml mesh plan --provider pg-main",
    );
  });

  it('80×24, every pair of pg-main: each pair named before any detail, and one line naming the mesh plan that lists their test logins and reloads', () => {
    const inv = inventory(false);
    const frame = draw(inv, planOf(inv, { by: 'provider', name: 'pg-main' }), 80, 24, true);
    fitsIn(frame, 80, 24);
    const text = joined(frame);
    for (const pair of ['pg-main:web1-app', 'pg-main:web2-app', 'pg-main:worker1-jobs'])
      expect(text).toContain(`${pair}:`);
    expect(text).not.toContain('more pair');
    expect(text).toMatch(
      /test login \(connect:\) and reload \(reload:\) are listed by baton --inventory \/srv\/mesh\.yaml mesh plan --provider pg-main/,
    );
    expect(text).toContain('Type 3 (the number of credentials)');
  });

  it('a tall terminal lists every pair with its test login and reload', () => {
    const inv = inventory(false);
    const text = joined(draw(inv, planOf(inv, { by: 'provider', name: 'pg-main' }), 120, 60, true));
    expect(text.match(/test login: none/g)).toHaveLength(3);
    for (const consumer of ['web1-app', 'web2-app', 'worker1-jobs'])
      expect(text).toContain(`reload ${consumer}: `);
    expect(text).not.toContain('more pair');
  });
});
