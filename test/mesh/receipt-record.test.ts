import { describe, expect, it } from 'vitest';
import {
  formatReceipt,
  parseReceipt,
  RECEIPT_SESSIONS_MAX,
  secretDigest,
  type Receipt,
} from '../../src/mesh/digest.js';

const digest = secretDigest('s3cret-value');
const whole: Receipt = {
  role: 'web1_app+a',
  digest,
  applied_at: '2026-12-01T10:00:00.000Z',
  database: { found: 'as-set', since: '2026-12-01T10:00:00.000Z', verifier: secretDigest('v') },
  login: 'web1_app_a',
  sessions: [
    { pid: 7, application_name: 'app', client_addr: null, backend_start: '2026-12-01T09:00:00.000Z' },
  ],
  ended_sessions: 2,
};

describe('a receipt read back through its schema (src/mesh/digest.ts)', () => {
  it('reads what the provisioner writes, field for field', () => {
    expect(parseReceipt(formatReceipt(whole))).toEqual(whole);
  });

  it('is not a receipt without a role or a well-formed digest, nor when it is not JSON or not an object', () => {
    for (const text of [
      JSON.stringify({ digest }),
      JSON.stringify({ role: 'r', digest: 'sha256:ABC' }),
      JSON.stringify({ role: 'r', digest: digest.toUpperCase() }),
      JSON.stringify({ role: 7, digest }),
      '{"role":"r","digest":',
      'null',
      '[]',
      '',
    ])
      expect(parseReceipt(text), text).toBeUndefined();
  });

  it('drops each field of another shape on its own, never keeping it half-typed, and keeps no unknown field', () => {
    const read = parseReceipt(
      JSON.stringify({
        role: 'r',
        digest,
        applied_at: 12,
        database: { found: 'vanished', since: 'x' },
        login: ['not', 'a', 'login'],
        sessions: [
          { pid: 1.5, application_name: 'a', client_addr: null, backend_start: 'x' },
          { pid: 2, application_name: 'b', client_addr: 5, backend_start: 'x' },
          { pid: 3, application_name: 'c', client_addr: '10.0.0.1', backend_start: 'x', query: 'SELECT 1' },
          'not a session',
        ],
        ended_sessions: -1,
        password: 'never kept',
      }),
    );
    expect(read).toEqual({
      role: 'r',
      digest,
      applied_at: '12',
      sessions: [{ pid: 3, application_name: 'c', client_addr: '10.0.0.1', backend_start: 'x' }],
    });
    expect(Object.keys(read!)).not.toContain('database');
    expect(JSON.stringify(read)).not.toContain('never kept');
    expect(JSON.stringify(read)).not.toContain('SELECT');
  });

  it("keeps a check's well-formed parts and drops the rest of it", () => {
    const read = parseReceipt(
      JSON.stringify({
        role: 'r',
        digest,
        applied_at: 'x',
        database: { found: 'as-set', since: 's', restored: 'as-set', verifier: 'sha256:short', problem: 3 },
      }),
    );
    expect(read?.database).toEqual({ found: 'as-set', since: 's' });
  });

  it(`names at most ${RECEIPT_SESSIONS_MAX} sessions, and a list that is not one is dropped whole`, () => {
    const sessions = Array.from({ length: 30 }, (_, pid) => ({
      pid,
      application_name: 'a',
      client_addr: null,
      backend_start: 'x',
    }));
    expect(parseReceipt(JSON.stringify({ role: 'r', digest, sessions }))?.sessions).toHaveLength(
      RECEIPT_SESSIONS_MAX,
    );
    expect(parseReceipt(JSON.stringify({ role: 'r', digest, sessions: { pid: 1 } }))).toEqual({
      role: 'r',
      digest,
      applied_at: '',
    });
  });
});
