/**
 * The provisioner's systemd unit (docs/provisioner-service.md): shipped as
 * contrib/baton-provision@.service, printed by `baton provision unit` with ExecStart naming the
 * Node and the bin/baton.js that ran it, and accepted by `systemd-analyze verify` — which does
 * refuse the path the docs used to give (/usr/bin/baton, which no install creates).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { systemdWord, UNIT_FILE, unitFor } from '../../src/commands/provision-unit.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { itWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';

const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((file) => existsSync(file));
const missing =
  SYSTEMD_ANALYZE === undefined ? 'systemd-analyze is not installed (apt-get install systemd)' : undefined;
const temp = makeTempDir('baton-unit-');
afterAll(() => temp.cleanup());
const template = readFileSync(path.join(REPO, UNIT_FILE), 'utf8');

/** `systemd-analyze verify` of `unit` as the instance for provider pg-main. */
async function verify(unit: string, name: string) {
  const dir = path.join(temp.dir, name);
  const file = path.join(dir, 'baton-provision@pg-main.service');
  await execa('mkdir', ['-p', dir]);
  writeFileSync(file, unit);
  return execa(SYSTEMD_ANALYZE!, ['verify', file], { reject: false, all: true });
}

describe('baton provision unit', () => {
  it('prints the shipped unit with ExecStart naming this Node and this bin/baton.js, the rest unchanged', async () => {
    assertBuilt();
    const run = await runBaton(['provision', 'unit']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const execStart = run.stdout.split('\n').filter((line) => line.startsWith('ExecStart='));
    expect(execStart).toEqual([
      `ExecStart=${process.execPath} ${path.resolve(BIN)} provision postgres --mesh-dir /var/lib/baton/mesh --provider %i --watch --interval 2`,
    ]);
    const others = (text: string) => text.split('\n').filter((line) => !line.startsWith('ExecStart='));
    // execa drops the final newline of what it captured.
    expect(others(run.stdout)).toEqual(others(template.trimEnd()));
  });

  it('is hardened as docs/provisioner-service.md says, which shows the shipped file as it is', () => {
    for (const line of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ReadWritePaths=/var/lib/baton/mesh',
      'CapabilityBoundingSet=',
    ])
      expect(template.split('\n')).toContain(line);
    const docs = readFileSync(path.join(REPO, 'docs', 'provisioner-service.md'), 'utf8');
    const shown = /```ini\n# contrib\/baton-provision@\.service\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(shown).toBe(template);
  });

  it('quotes a path ExecStart would split, and doubles a % systemd would read as a specifier', () => {
    expect(systemdWord('/opt/node 22/bin/node')).toBe('"/opt/node 22/bin/node"');
    expect(systemdWord('/srv/100%/baton.js')).toBe('/srv/100%%/baton.js');
    expect(systemdWord('/a"b\\c')).toBe('"/a\\"b\\\\c"');
    expect(unitFor(template, '/opt/node 22/bin/node', '/srv/b/bin/baton.js')).toContain(
      'ExecStart="/opt/node 22/bin/node" /srv/b/bin/baton.js provision postgres --mesh-dir',
    );
    expect(() => unitFor('[Service]\nExecStart=/usr/bin/baton\n', '/n', '/b')).toThrow(
      /no "ExecStart=<node>/,
    );
  });

  itWithPart(
    missing,
    'systemd-analyze verify: clean for the printed unit, refusing for /usr/bin/baton',
    async () => {
      assertBuilt();
      const printed = (await runBaton(['provision', 'unit'])).stdout;
      const clean = await verify(printed, 'printed');
      expect(clean.all).toBe('');
      expect(clean.exitCode).toBe(0);
      const assumed = await verify(
        printed.replace(/^ExecStart=\S+ \S+/m, 'ExecStart=/usr/bin/baton'),
        'assumed',
      );
      expect(assumed.exitCode).not.toBe(0);
      expect(assumed.all).toMatch(/\/usr\/bin\/baton is not executable/);
    },
  );
});
