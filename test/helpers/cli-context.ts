/**
 * A CliContext for running a command function in-process, as the program would, with both
 * streams captured into one text: what an operator's terminal would have shown.
 */
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/config.js';
import type { CliContext } from '../../src/commands/context.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';

export function capturingContext(stateDir: string): { ctx: CliContext; output: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  const ctx: CliContext = {
    config: () => loadConfig({ stateDir }),
    stdout: stream as unknown as NodeJS.WriteStream,
    stderr: stream as unknown as NodeJS.WriteStream,
    env: { ...process.env, BATON_CONFIG: '' },
    suggester: () => PLAIN_SUGGESTER,
  };
  return { ctx, output: () => text };
}
