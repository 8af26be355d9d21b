/**
 * The rules under a dropped session, in-process: an output whose far end is gone (EPIPE from a
 * pipe, EIO from a hung-up pty) is dropped and remembered, any other stream error still
 * surfaces; the first signal stops a rotation and a later one never ends baton. The real
 * terminal drops are test/reliability/session-drop.test.ts.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { isGoneEndError, keepGoingWhenOutputCloses } from '../../src/commands/closed-output.js';
import { signalReason, stopOnSignals } from '../../src/commands/rotation-signals.js';

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
});
