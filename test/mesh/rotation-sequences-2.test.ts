/**
 * File 2 of 4 of the seeded rotation sequences (test/mesh/rotation-sequence-runner.ts): its own
 * PostgreSQL and seed, so vitest runs the four in parallel. It prints its own line of figures.
 */
import { describeSequences } from './rotation-sequence-runner.js';

describeSequences(2, 4);
