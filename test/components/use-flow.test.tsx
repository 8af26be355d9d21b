import { describe, expect, it, vi } from 'vitest';
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import { useState } from 'react';
import { useFlow, useFlowState } from '../../components/hooks/use-flow.js';
import { createFlow, type EffectRunner, type Flow, type Step } from '../../src/app/flow.js';

type S = { readonly answers: number };
type E = { readonly type: 'answer' };
type F = { readonly type: 'ask' };

/** Each answer asks again: a flow that would go on reading as long as it is mounted. */
const reduce = (state: S): Step<S, F> => ({
  state: { answers: state.answers + 1 },
  effects: [{ type: 'ask' }],
});
const initial: Step<S, F> = { state: { answers: 0 }, effects: [{ type: 'ask' }] };

function Probe({ runner }: { runner: EffectRunner<S, E, F> }) {
  const [state] = useFlow(reduce, initial, runner);
  return <Text>answers {state.answers}</Text>;
}

describe('useFlow', () => {
  it('renders the flow state; once unmounted a late answer is dropped and nothing more is asked', async () => {
    const asked: Array<() => void> = [];
    const runner: EffectRunner<S, E, F> = {
      run: () => new Promise<E>((resolve) => asked.push(() => resolve({ type: 'answer' }))),
      failed: () => ({ type: 'answer' }),
    };
    const view = render(<Probe runner={runner} />);
    await new Promise((r) => setImmediate(r));
    expect(asked.length).toBe(1);
    asked[0]!();
    await new Promise((r) => setTimeout(r, 20));
    expect(view.lastFrame()).toContain('answers 1');
    expect(asked.length).toBe(2);
    view.unmount();
    asked[1]!();
    await new Promise((r) => setTimeout(r, 20));
    // The answer after unmount reached no reducer: no third question was asked.
    expect(asked.length).toBe(2);
  });

  it('useFlowState coalesces a burst of the named events into one frame; another event, or a redraw for another reason, shows no half-burst', async () => {
    type Ev = { readonly type: 'tick' } | { readonly type: 'done' };
    type Counted = { readonly ticks: number; readonly done: boolean };
    const flow: Flow<Counted, Ev> = createFlow<Counted, Ev, never>(
      (state, event) => ({
        state: event.type === 'tick' ? { ...state, ticks: state.ticks + 1 } : { ...state, done: true },
        effects: [],
      }),
      { state: { ticks: 0, done: false }, effects: [] },
      { run: async () => undefined, failed: () => ({ type: 'done' }) },
    );
    let redraw: () => void = () => {};
    function Coalesced() {
      const state = useFlowState(flow, { events: (e) => e.type === 'tick', frameMs: 60_000 });
      const [, setOther] = useState(0);
      redraw = () => setOther((n) => n + 1);
      return (
        <Text>
          ticks {state.ticks} {state.done ? 'done' : 'busy'}
        </Text>
      );
    }
    const view = render(<Coalesced />);
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 100; i++) flow.dispatch({ type: 'tick' });
    redraw();
    await new Promise((r) => setTimeout(r, 20));
    // The frame (60 s away) has not been drawn: the redraw for another reason still shows none of the burst.
    expect(view.lastFrame()).toBe('ticks 0 busy');
    flow.dispatch({ type: 'done' });
    await vi.waitFor(() => expect(view.lastFrame()).toBe('ticks 100 done'), { timeout: 10_000 });
    view.unmount();
  });
});
