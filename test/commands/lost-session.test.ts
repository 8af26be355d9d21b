/**
 * The rules under a dropped session, in-process: an output whose far end is gone (EPIPE from a
 * pipe, EIO from a hung-up pty) is dropped and remembered, any other stream error still
 * surfaces; the first signal stops a rotation and a later one never ends baton. The real
 * terminal drops are test/reliability/session-drop.test.ts.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { isGoneEndError, keepGoingWhenOutputCloses } from '../../src/commands/closed-output.js';
import { finishingThroughSignals, signalReason, stopOnSignals } from '../../src/commands/rotation-signals.js';

const errno = (code: string) => Object.assign(new Error(`write ${code}`), { code });

describe('output whose reader or terminal is gone', () => {
  it.each(['EPIPE', 'EIO', 'ENXIO', 'ERR_STREAM_DESTROYED'])(
    '%s is dropped, remembered, and told once',
    (code) => {
      const stream = new EventEmitter();
      let told = 0;
      const output = keepGoingWhenOutputCloses(stream, () => (told += 1));
      expect(output.closed()).toBe(false);
      stream.emit('error', errno(code));
      stream.emit('error', errno(code));
      expect(output.closed()).toBe(true);
      expect(told).toBe(1);
      // Asked again later (another command path): the same answer, one listener on the stream.
      let late = 0;
      expect(keepGoingWhenOutputCloses(stream, () => (late += 1)).closed()).toBe(true);
      expect(late).toBe(1);
      expect(stream.listenerCount('error')).toBe(1);
    },
  );

  it('any other error is not swallowed', () => {
    const stream = new EventEmitter();
    const output = keepGoingWhenOutputCloses(stream);
    expect(() => stream.emit('error', errno('ENOSPC'))).toThrow('write ENOSPC');
    expect(output.closed()).toBe(false);
    expect(isGoneEndError(errno('EACCES'))).toBe(false);
    expect(isGoneEndError('EIO')).toBe(false);
  });
});

describe("a rotation's signals", () => {
  it('the first stops it with its reason; later ones only say so and never end the process', () => {
    const proc = new EventEmitter() as unknown as NodeJS.Process;
    const stop = new AbortController();
    const said: string[] = [];
    const unhook = stopOnSignals(stop, (line) => said.push(line), proc);
    proc.emit('SIGHUP', 'SIGHUP');
    expect(stop.signal.aborted).toBe(true);
    expect((stop.signal.reason as Error).message).toBe(signalReason('SIGHUP'));
    expect(said).toEqual([]);
    proc.emit('SIGINT', 'SIGINT');
    proc.emit('SIGINT', 'SIGINT');
    expect(said).toHaveLength(2);
    expect(said[0]).toContain('SIGINT again: still taking back what did not finish');
    unhook();
    expect(proc.listenerCount('SIGINT') + proc.listenerCount('SIGTERM') + proc.listenerCount('SIGHUP')).toBe(
      0,
    );
  });

  it('mesh resume and mesh rollback go on through SIGHUP, SIGTERM and a second Ctrl-C, saying so, and unhook after', async () => {
    const proc = new EventEmitter() as unknown as NodeJS.Process;
    const said: string[] = [];
    let finish!: (code: number) => void;
    const running = finishingThroughSignals(
      'mesh rollback rot-x',
      (line) => said.push(line),
      () => new Promise<number>((resolve) => (finish = resolve)),
      proc,
    );
    // Every signal is answered; none has a default to fall back on while the operation runs.
    for (const signal of ['SIGHUP', 'SIGINT', 'SIGINT', 'SIGTERM'] as const) {
      expect(proc.listenerCount(signal)).toBe(1);
      proc.emit(signal, signal);
    }
    expect(said).toHaveLength(4);
    expect(said[0]).toMatch(/^SIGHUP: mesh rollback rot-x goes on to the end/);
    expect(said[2]).toMatch(/^SIGINT: mesh rollback rot-x goes on/);
    finish(0);
    await expect(running).resolves.toBe(0);
    expect(proc.listenerCount('SIGINT') + proc.listenerCount('SIGTERM') + proc.listenerCount('SIGHUP')).toBe(
      0,
    );
    // A failure unhooks too.
    await expect(
      finishingThroughSignals(
        'mesh resume rot-x',
        () => undefined,
        () => Promise.reject(new Error('no')),
        proc,
      ),
    ).rejects.toThrow('no');
    expect(proc.listenerCount('SIGINT')).toBe(0);
  });
});
