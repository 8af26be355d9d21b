/**
 * A PostgreSQL error's message quotes what the server was given (a role name, a value), and an
 * ssh or file-system error names a path: whoever wrote those can put a line break or ESC in
 * them. Every helper that turns such an error into a log line or a refusal shows it escaped.
 */
import { describe, expect, it } from 'vitest';
import { describeFsError } from '../../src/provisioner/delivered-credentials.js';
import { messageOf } from '../../src/provisioner/postgres-roles.js';
import { reasonOf } from '../../src/mesh/transport.js';

const HOSTILE = 'role "app\r\nNext: baton sync --force\x1b[8m\u202e" does not exist';
const SHOWN = 'role "app\\r\\nNext: baton sync --force\\x1b[8m\\u202e" does not exist';

describe('error messages from outside', () => {
  it('are shown escaped by messageOf, reasonOf and describeFsError, for an Error and for anything thrown', () => {
    for (const helper of [messageOf, reasonOf, describeFsError]) {
      expect(helper(new Error(HOSTILE))).toBe(SHOWN);
      expect(helper(HOSTILE)).toBe(SHOWN);
    }
    // A plain message passes unchanged: only what a terminal would obey is escaped.
    expect(messageOf(new Error('password authentication failed for user "app"'))).toBe(
      'password authentication failed for user "app"',
    );
  });
});
