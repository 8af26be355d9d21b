#!/usr/bin/env node
/**
 * The composition root (DESIGN.md §3): reads config, builds adapters, and either mounts an
 * Ink view (TTY) or runs the same flow with plain line output. The command tree is in
 * program.ts so tests can parse arguments without spawning a process.
 */
import { main } from './program.js';

await main(process.argv);
