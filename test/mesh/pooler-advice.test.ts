/**
 * A refused test login answered by a pooler names the pooler, not only pg_hba.conf:
 * pgbouncer says SQLSTATE 08P01 for its own authentication failures, PostgreSQL 28P01. The
 * advice then names its auth_file / auth_query and RELOAD, never only pg_hba.conf.
 */
import { describe, expect, it } from 'vitest';
import { answeredByPooler, refusedLoginAdvice } from '../../src/app/rotation-app-text.js';

const base = { login: 'web1_app', machine: 'web1' };

describe('a refused test login answered by pgbouncer', () => {
  it.each(['SASL authentication failed', 'password authentication failed', 'no such user'])(
    '08P01 "%s": the advice names the pooler, its auth_file and auth_query',
    (reason) => {
      const t = { ...base, code: '08P01', reason };
      expect(answeredByPooler(t)).toBe(true);
      const advice = refusedLoginAdvice(t);
      expect(advice).toContain('the server that answered is a pooler');
      expect(advice).toContain("its auth_file still holds web1_app's old SCRAM verifier");
      expect(advice).toContain('auth_query');
      expect(advice).toContain('RELOAD on its admin console');
      expect(advice).not.toContain('pg_hba.conf');
    },
  );

  it("PostgreSQL's own refusals keep the database's advice, which also mentions a pooler in front", () => {
    for (const t of [
      { ...base, code: '28P01', reason: 'password authentication failed for user "web1_app"' },
      { ...base, code: '28000', reason: 'no pg_hba.conf entry for host' },
      { ...base, code: '08P01', reason: 'invalid startup packet layout' },
    ]) {
      expect(answeredByPooler(t)).toBe(false);
      expect(refusedLoginAdvice(t)).toContain('pg_hba.conf, CONNECTION LIMIT, the network');
    }
  });
});
