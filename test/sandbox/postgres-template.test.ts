/**
 * The sandbox PostgreSQL started from a kept template cluster (POSTGRES_TEMPLATES_ENV, which the
 * suite's global setup sets): initdb runs once per build and superuser, and every server is a
 * copy of its own — what one server is told, another never sees.
 */
import { chmodSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_TEMPLATES_ENV, startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser, canLogin, superuserPassword } from '../helpers/postgres.js';

const servers: PostgresSandbox[] = [];
let tmp: { dir: string; cleanup: () => void };
let before: string | undefined;

beforeAll(() => {
  tmp = makeTempDir('baton-pg-template-');
  // As the run directory is: initdb runs as `postgres` under root and must reach the template's.
  chmodSync(tmp.dir, 0o755);
  before = process.env[POSTGRES_TEMPLATES_ENV];
  process.env[POSTGRES_TEMPLATES_ENV] = path.join(tmp.dir, 'templates');
});

afterAll(async () => {
  for (const server of servers) await server.destroy();
  if (before === undefined) delete process.env[POSTGRES_TEMPLATES_ENV];
  else process.env[POSTGRES_TEMPLATES_ENV] = before;
  tmp.cleanup();
});

describe('servers copied from one template cluster', () => {
  it('one initdb for two servers at once; each runs on its own data, and a role made on one is unknown to the other', async () => {
    servers.push(...(await Promise.all([startPostgres(), startPostgres()])));
    const [a, b] = servers as [PostgresSandbox, PostgresSandbox];
    // One template for this build and superuser, whichever start got there first; no staging left.
    expect(readdirSync(path.join(tmp.dir, 'templates'))).toHaveLength(1);
    expect(a.dataDir).not.toBe(b.dataDir);
    expect(statSync(a.dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(a.superuserPasswordFile).mode & 0o777).toBe(0o600);
    expect(await canLogin(a, a.superuser, superuserPassword(a))).toBe(true);
    expect(await canLogin(b, b.superuser, superuserPassword(b))).toBe(true);

    await asSuperuser(a, (c) => c.query("CREATE ROLE only_on_a LOGIN PASSWORD 'pw-on-a'"));
    expect(await canLogin(a, 'only_on_a', 'pw-on-a')).toBe(true);
    expect(await canLogin(b, 'only_on_a', 'pw-on-a')).toBe(false);

    // A third server later is a copy of the same template, with none of a's role.
    const c = await startPostgres();
    servers.push(c);
    expect(readdirSync(path.join(tmp.dir, 'templates'))).toHaveLength(1);
    expect(await canLogin(c, 'only_on_a', 'pw-on-a')).toBe(false);
  });
});
