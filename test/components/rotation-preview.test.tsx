/**
 * The rotation gate's preview lists what it counts: one line per pair (its window, or that it
 * has none), the login `--revoke-previous` revokes, and when the rows run out, a last line
 * that counts the rest by kind and names the `mesh plan` that lists each. An alternating pair
 * is never counted as a window ("…and 3 more windows like it" listed none, and counted them).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RotationView } from '../../components/rotation/RotationView.js';
import type { RotationState } from '../../src/app/rotation-flow.js';
import { parseInventory } from '../../src/mesh/inventory.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { linesFit, renderAt, type Rendered } from './render-at.js';

const mounted: Rendered[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) m.unmount();
});

/** pg-main on db1 to `singles` single consumers and `alternating` alternating ones, each on its own machine. */
function planOf(singles: number, alternating: number): RotationPlan {
  const consumers = [
    ...Array.from({ length: singles }, (_, i) => ({ name: `web${i + 1}`, alternating: false })),
    ...Array.from({ length: alternating }, (_, i) => ({ name: `web${singles + i + 1}`, alternating: true })),
  ];
  const text = [
    'machines:',
    '  - { name: db1, address: db1.internal, transport: ssh }',
    ...consumers.map((c) => `  - { name: ${c.name}, address: ${c.name}.internal, transport: ssh }`),
    'providers:',
    '  - { name: pg-main, machine: db1, kind: postgres }',
    'consumers:',
    ...consumers.map(
      (c) =>
        `  - { name: ${c.name}-app, machine: ${c.name}, reads: each-connection, uses: [pg-main]${c.alternating ? ', credential: alternating' : ''} }`,
    ),
    '',
  ].join('\n');
  const plan = planRotation(parseInventory(text, '/srv/mesh.yaml'), { by: 'provider', name: 'pg-main' });
  // Settled as after resolving: each alternating consumer is on login a and moves to b.
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

function confirming(plan: RotationPlan): RotationState {
  return {
    step: 'confirming',
    id: '20261201T195012Z-1a2b3c',
    plan,
    typed: '',
    resolutions: Object.fromEntries(plan.holders.map((h) => [h.machine, { status: 'resolved' as const }])),
  };
}

function draw(plan: RotationPlan, columns: number, rows: number, revoke = true): string {
  const view = renderAt(
    <RotationView
      state={confirming(plan)}
      columns={columns}
      rows={rows}
      offset={0}
      color={false}
      tick={0}
      {...(revoke ? { revoke: { endSessions: false } } : {})}
      planCommand="baton --inventory /srv/mesh.yaml mesh plan --provider pg-main"
    />,
    columns,
    rows,
  );
  mounted.push(view);
  return view.lastFrame();
}

/** The screen's text with its wrapping undone, to find a sentence whatever the width. */
const joined = (frame: string) => frame.replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ');

describe('the rotation gate lists what it counts', () => {
  it("--revoke-previous at 80×24, 1 single and 3 alternating pairs: every pair's line and every login to revoke", () => {
    const frame = draw(planOf(1, 3), 80, 24);
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    const text = joined(frame);
    expect(text).toContain('pg-main:web1-app: window from pg-main applying the new password for web1_app');
    for (const n of [2, 3, 4]) {
      expect(text).toContain(
        `pg-main:web${n}-app: no window, web${n}_app_a → web${n}_app_b; revokes web${n}_app_a.`,
      );
    }
    expect(text).toContain(
      'Revoke, once every consumer end is live: web2_app_a, web3_app_a and web4_app_a get a password delivered nowhere',
    );
    expect(text).not.toContain('like it');
    expect(text).not.toContain('more pair');
    // All of it on one screen: the frame has nothing to scroll.
    expect(text).not.toMatch(/more \(\d+–\d+ of \d+ lines\)/);
    expect(text).toContain('Type 4 (the number of credentials)');
  });

  it('without --revoke-previous an alternating pair is said to have no window, and its login to keep working', () => {
    const text = joined(draw(planOf(2, 1), 80, 24, false));
    expect(text).toContain('pg-main:web1-app: window from pg-main');
    expect(text).toContain(
      "pg-main:web2-app: the same window, for web2_app until web2-app's file is replaced.",
    );
    expect(text).toContain('pg-main:web3-app: no window, web3_app_a → web3_app_b; web3_app_a keeps working.');
    expect(text).not.toContain('Revoke:');
  });

  it('more pairs than rows: the rest counted by kind, never as windows, with the mesh plan that lists each', () => {
    const frame = draw(planOf(3, 12), 80, 24);
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    const text = joined(frame);
    const folded =
      /…and (\d+) more pairs \((?:(\d+) with a window, )?(\d+) with none \(alternating\): (\d+) of them to revoke\), each listed by baton --inventory \/srv\/mesh\.yaml mesh plan --provider pg-main/.exec(
        text,
      );
    expect(folded, text).not.toBeNull();
    const listed = (text.match(/pg-main:web\d+-app: /g) ?? []).length;
    expect(listed + Number(folded![1])).toBe(15);
    // The kinds add up to the pairs folded; those to revoke are among the alternating ones.
    expect(Number(folded![2] ?? 0) + Number(folded![3])).toBe(Number(folded![1]));
    expect(Number(folded![4])).toBeLessThanOrEqual(Number(folded![3]));
    // 15 logins are too many for one sentence: it counts them, each being on its pair's line.
    expect(text).toContain('the 12 logins marked "revokes" get a password delivered nowhere');
    expect(text).toContain('Type 15 (the number of credentials)');
  });

  it('a tall terminal lists every pair', () => {
    const text = joined(draw(planOf(3, 12), 120, 60));
    expect((text.match(/pg-main:web\d+-app: /g) ?? []).length).toBe(15);
    expect(text).not.toContain('more pair');
  });
});
