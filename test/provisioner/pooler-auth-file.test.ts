/**
 * The pgbouncer auth_file the provisioner keeps (src/provisioner/pooler-auth-file.ts): pgbouncer's
 * quoting (fields in double quotes, a `"` doubled), only the rotated login's line replaced and
 * every other line kept byte for byte, and lines asked for together written in one rewrite with
 * one RELOAD, the file's mode and owner kept.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authLineUser, quoteAuthField, withAuthLine } from '../../src/mesh/pooler-auth-line.js';
import { PoolerAuthFile } from '../../src/provisioner/pooler-auth-file.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const V1 = 'SCRAM-SHA-256$4096:c2FsdDE=$c3RvcmVk:c2VydmVy';
const V2 = 'SCRAM-SHA-256$4096:c2FsdDI=$c3RvcmVk:c2VydmVy';

describe("pgbouncer's auth_file lines", () => {
  it('a field is double-quoted with every " doubled, and read back the same way', () => {
    expect(quoteAuthField('web1_app')).toBe('"web1_app"');
    expect(quoteAuthField('a"b""c')).toBe('"a""b""""c"');
    expect(authLineUser('"a""b""""c" "x"')).toBe('a"b""c');
    expect(authLineUser('  "web1_app"  "x" trailing')).toBe('web1_app');
    for (const line of ['', '; "web1_app" "x"', '# comment', 'web1_app "x"'])
      expect(authLineUser(line)).toBe(undefined);
  });

  it("only the login's line changes; comments, other logins and a look-alike quoted user are kept byte for byte", () => {
    const text = [
      '"pgbouncer" "clear-admin"',
      '; "web1_app" is mentioned in a comment',
      '"web1_app""x" "SCRAM-SHA-256$other"',
      `"web1_app" "${V1}"`,
      '"web2_app" "md5abc"',
      '',
    ].join('\n');
    expect(withAuthLine(text, 'web1_app', V2)).toBe(text.replace(V1, V2));
  });

  it('a login without a line gets one at the end; duplicates become one line (the first place)', () => {
    expect(withAuthLine('"a" "1"', 'web1_app', V1)).toBe(`"a" "1"\n"web1_app" "${V1}"\n`);
    expect(withAuthLine('', 'web1_app', V1)).toBe(`"web1_app" "${V1}"\n`);
    expect(withAuthLine(`"web1_app" "old"\n"b" "2"\n"web1_app" "older"\n`, 'web1_app', V2)).toBe(
      `"web1_app" "${V2}"\n"b" "2"\n`,
    );
  });
});

describe('the auth_file the provisioner keeps', () => {
  let tmp: { dir: string; cleanup: () => void };
  let file: string;
  beforeEach(() => {
    tmp = makeTempDir('baton-auth-file-');
    file = path.join(tmp.dir, 'userlist.txt');
    writeFileSync(file, '"pgbouncer" "admin"\n');
    chmodSync(file, 0o640);
  });
  afterEach(() => tmp.cleanup());

  it('lines asked for together are written in one rewrite and one RELOAD; mode kept', async () => {
    const reloads: string[] = [];
    const keeper = new PoolerAuthFile({
      file,
      reload: () => {
        reloads.push(readFileSync(file, 'utf8'));
        return Promise.resolve();
      },
    });
    await Promise.all([keeper.set('web1_app', V1), keeper.set('web2_app', V2)]);
    expect(reloads).toEqual([`"pgbouncer" "admin"\n"web1_app" "${V1}"\n"web2_app" "${V2}"\n`]);
    expect(statSync(file).mode & 0o777).toBe(0o640);
    await keeper.set('web1_app', V2);
    expect(reloads).toHaveLength(2);
    expect(readFileSync(file, 'utf8')).toBe(`"pgbouncer" "admin"\n"web1_app" "${V2}"\n"web2_app" "${V2}"\n`);
  });

  it('a RELOAD that fails rejects every line of its batch (no receipt follows), and the next set tries again', async () => {
    let fail = true;
    const keeper = new PoolerAuthFile({
      file,
      reload: () => (fail ? Promise.reject(new Error('admin console refused')) : Promise.resolve()),
    });
    await expect(keeper.set('web1_app', V1)).rejects.toThrow('admin console refused');
    fail = false;
    await expect(keeper.set('web1_app', V1)).resolves.toBe(undefined);
    expect(readFileSync(file, 'utf8')).toBe(`"pgbouncer" "admin"\n"web1_app" "${V1}"\n`);
  });
});
