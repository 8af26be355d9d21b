/**
 * The machine side's one program (agent/baton-agent.pl, docs/agent-protocol.md) as the text baton
 * sends with each session. The build inlines it (scripts/build.mjs defines BATON_AGENT_SOURCE),
 * so an installed baton sends exactly the program it was built with: a holder never runs another
 * version than the one the codec speaks. From the sources (tests, tsx) it is read beside this file.
 */
import { readFileSync } from 'node:fs';

declare const BATON_AGENT_SOURCE: string | undefined;

/** The agent's path in the repository, relative to this module (the build reads it from there too). */
export const AGENT_FILE = new URL('./agent/baton-agent.pl', import.meta.url);

let source: string | undefined;

/** The agent's text, without its final line break (what a session's stdin carries first: remote-scripts.ts agentInput). */
export function agentSource(): string {
  source ??= (
    typeof BATON_AGENT_SOURCE === 'string' ? BATON_AGENT_SOURCE : readFileSync(AGENT_FILE, 'utf8')
  ).trimEnd();
  return source;
}
