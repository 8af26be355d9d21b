import { describe, expect, it } from 'vitest';
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import { useFlow } from '../../components/hooks/use-flow.js';
import type { EffectRunner, Step } from '../../src/app/flow.js';

type S = { readonly answers: number };
type E = { readonly type: 'answer' };
type F = { readonly type: 'ask' };

/** Each answer asks again: a flow that would go on reading as long as it is mounted. */
const reduce = (state: S): Step<S, F> => ({ state: { answers: state.answers + 1 }, effects: [{ type: 'ask' }] });
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
});
