/**
 * An app for measuring a rotation's window from the outside: it re-reads its password file for
 * EVERY new connection, every 50 ms, and records what happened with which password. Free of
 * vitest, so the bench uses it too.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { PostgresSandbox } from '../../src/sandbox/postgres.js';

export interface AppAttempt {
  readonly password: string;
  readonly ok: boolean;
  /** The server's SQLSTATE when it refused (28P01: wrong password). */
  readonly code?: string;
  /** When the attempt started (ms since the epoch). */
  readonly at: number;
}

/**
 * An app that re-reads its password file for EVERY new connection, every 50 ms, and records
 * what happened with which password. A missing file (before the first rotation) is skipped.
 */
export function startPasswordApp(sandbox: PostgresSandbox, file: () => string, role: string): { readonly attempts: AppAttempt[]; stop(): Promise<void> } {
  const attempts: AppAttempt[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      let password: string | undefined;
      try {
        password = readFileSync(file(), 'utf8');
      } catch {
        password = undefined;
      }
      if (password !== undefined) {
        const client = new pg.Client({ host: sandbox.host, port: sandbox.port, database: 'postgres', user: role, password });
        client.on('error', () => undefined);
        try {
          await client.connect();
          await client.query('SELECT 1');
          attempts.push({ password, ok: true, at: started });
        } catch (error) {
          attempts.push({ password, ok: false, code: (error as { code?: string }).code, at: started });
        } finally {
          await client.end().catch(() => undefined);
        }
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 50 - (Date.now() - started))));
    }
  })();
  return {
    attempts,
    async stop() {
      running = false;
      await loop;
    },
  };
}
