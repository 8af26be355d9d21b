/**
 * The agent program as the contract's transports send it (agent-contract-*.test.ts mock
 * src/transport/agent-program.js with this module): the real file, unless a case asks for
 * another text — a stale copy answering another protocol — to check that baton refuses it.
 */
import { vi } from 'vitest';
import type * as program from '../../src/transport/agent-program.js';

const real = await vi.importActual<typeof program>('../../src/transport/agent-program.js');

export const AGENT_FILE = real.AGENT_FILE;

let instead: string | undefined;

export function agentSource(): string {
  return instead ?? real.agentSource();
}

/** Sends `text` as the agent until called again with undefined. */
export function sendInstead(text: string | undefined): void {
  instead = text;
}

/** The real agent's text with its protocol number changed: another version answering. */
export function agentSpeaking(protocol: number): string {
  const text = real.agentSource();
  const changed = text.replace(/^our \$PROTOCOL = \d+;$/m, `our $PROTOCOL = ${protocol};`);
  if (changed === text) throw new Error('the agent no longer states `our $PROTOCOL = N;`');
  return changed;
}
