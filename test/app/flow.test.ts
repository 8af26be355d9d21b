import { describe, expect, it } from 'vitest';
import { createFlow, settle, type EffectRunner, type Step } from '../../src/app/flow.js';

/** A counter flow: `go` asks for the effects `a` then `b`; each effect's result event is logged. */
type S = { readonly log: readonly string[] };
type E =
  | { readonly type: 'go' }
  | { readonly type: 'got'; readonly what: string }
  | { readonly type: 'broke'; readonly what: string };
type F = { readonly type: 'a' | 'b' | 'boom' };

const reduce = (state: S, event: E): Step<S, F> => {
  if (event.type === 'go')
    return { state: { log: [...state.log, 'go'] }, effects: [{ type: 'a' }, { type: 'b' }] };
  return { state: { log: [...state.log, `${event.type}:${event.what}`] }, effects: [] };
};
const start: Step<S, F> = { state: { log: [] }, effects: [] };

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function runner(gates: Partial<Record<F['type'], Promise<void>>>, started: string[]): EffectRunner<S, E, F> {
  return {
    async run(effect) {
      started.push(effect.type);
      await gates[effect.type];
      if (effect.type === 'boom') throw new Error('the S3 answer broke');
      return { type: 'got', what: effect.type };
    },
    failed: (effect, error) => ({ type: 'broke', what: `${effect.type}: ${(error as Error).message}` }),
  };
}

describe('createFlow', () => {
  it('sequential: the second effect starts only after the first has ended and its event is in', async () => {
    const a = deferred();
    const started: string[] = [];
    const flow = createFlow(reduce, start, runner({ a: a.promise }, started), { sequential: true });
    flow.dispatch({ type: 'go' });
    await Promise.resolve();
    await Promise.resolve();
    expect(started).toEqual(['a']);
    a.resolve();
    await flow.idle();
    expect(started).toEqual(['a', 'b']);
    expect(flow.getState().log).toEqual(['go', 'got:a', 'got:b']);
  });

  it('without the option effects start at once, each event in the order they end', async () => {
    const a = deferred();
    const started: string[] = [];
    const flow = createFlow(reduce, start, runner({ a: a.promise }, started));
    flow.dispatch({ type: 'go' });
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['a', 'b']);
    expect(flow.getState().log).toEqual(['go', 'got:b']);
    a.resolve();
    await flow.idle();
    expect(flow.getState().log).toEqual(['go', 'got:b', 'got:a']);
  });

  it('a run-effect that throws becomes its named failure event; the flow goes on', async () => {
    const flow = createFlow(
      reduce,
      { state: { log: [] }, effects: [{ type: 'boom' }, { type: 'a' }] },
      runner({}, []),
      { sequential: true },
    );
    await flow.idle();
    expect(flow.getState().log).toEqual(['broke:boom: the S3 answer broke', 'got:a']);
    expect(
      await settle(runner({}, []), { type: 'boom' }, { state: { log: [] }, dispatch: () => undefined }),
    ).toEqual({ type: 'broke', what: 'boom: the S3 answer broke' });
  });

  it('after close, a late answer is dropped: the state stays as it was and no listener is called', async () => {
    const a = deferred();
    const flow = createFlow(reduce, start, runner({ a: a.promise }, []));
    const heard: string[][] = [];
    flow.subscribe((state) => heard.push([...state.log]));
    flow.dispatch({ type: 'go' });
    await new Promise((r) => setImmediate(r));
    expect(flow.getState().log).toEqual(['go', 'got:b']);
    const b = deferred();
    const late = createFlow(reduce, start, runner({ a: b.promise }, []));
    late.dispatch({ type: 'go' });
    late.close();
    b.resolve();
    await late.idle();
    expect(late.getState().log).toEqual(['go']);
    late.dispatch({ type: 'go' });
    expect(late.getState().log).toEqual(['go']);
    flow.close();
    a.resolve();
    await flow.idle();
    expect(flow.getState().log).toEqual(['go', 'got:b']);
    expect(heard).toEqual([['go'], ['go', 'got:b']]);
  });

  it('after stop only the effects allowed to run after stop start; the one in flight finishes', async () => {
    const a = deferred();
    const started: string[] = [];
    const flow = createFlow(reduce, start, runner({ a: a.promise }, started), {
      sequential: true,
      runsAfterStop: (effect) => effect.type === 'a',
    });
    flow.dispatch({ type: 'go' });
    await Promise.resolve();
    await Promise.resolve();
    flow.stop();
    a.resolve();
    await flow.idle();
    expect(started).toEqual(['a']);
    expect(flow.getState().log).toEqual(['go', 'got:a']);
  });

  it('finished resolves once a finished state is reached and nothing runs; a deferred start waits for start()', async () => {
    const started: string[] = [];
    const flow = createFlow(reduce, { state: { log: [] }, effects: [{ type: 'a' }] }, runner({}, started), {
      deferStart: true,
      isFinished: (s) => s.log.includes('got:a'),
    });
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([]);
    flow.start();
    flow.start();
    expect((await flow.finished()).log).toEqual(['got:a']);
    expect(started).toEqual(['a']);
  });

  it('the types require every runner to name the event a thrown error becomes', () => {
    const run = async (): Promise<E | undefined> => undefined;
    // @ts-expect-error a runner without `failed` is refused: there would be no event for a thrown error.
    const flow = createFlow(reduce, start, { run });
    expect(flow.getState()).toEqual({ log: [] });
  });
});
