import { describe, expect, it } from 'vitest';
import { Secret } from '../../src/mesh/secret.js';
import type { ExecFn } from '../../src/transport/run-process.js';
import { sshArgs, sshTransport } from '../../src/transport/ssh-transport.js';
import type { SshTarget } from '../../src/mesh/inventory.js';
import { AGENT_PROTOCOL } from '../../src/transport/agent-protocol.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { agentInput } from '../../src/transport/remote-scripts.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';

const target: SshTarget = {
  host: 'db1.internal',
  user: 'deploy',
  port: 2222,
  identity: '/k/id',
  knownHosts: '/k/known_hosts',
  strictHostKeyChecking: 'yes',
  config: undefined,
  connectTimeout: 5,
};

/** A scripted ssh: answers what a test says; the real one is exercised in ssh-transport.test.ts. */
function scripted(answer: { stdout?: string; stderr?: string; exitCode?: number }): {
  exec: ExecFn;
  calls: { args: readonly string[]; input?: string }[];
} {
  const calls: { args: readonly string[]; input?: string }[] = [];
  const exec: ExecFn = async (_file, args, options) => {
    calls.push({ args, ...(options.input === undefined ? {} : { input: options.input }) });
    return {
      exitCode: answer.exitCode ?? 0,
      stdout: answer.stdout ?? '',
      stderr: answer.stderr ?? '',
      cancelled: false,
      failedToStart: undefined,
    };
  };
  return { exec, calls };
}

describe('the ssh transport', () => {
  it("runs ssh in batch mode with the inventory's port, key and host-key policy", () => {
    expect(sshArgs(target)).toEqual([
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=5',
      '-T',
      '-p',
      '2222',
      '-i',
      '/k/id',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'UserKnownHostsFile=/k/known_hosts',
      '-o',
      'StrictHostKeyChecking=yes',
      '-l',
      'deploy',
      '--',
      'db1.internal',
    ]);
  });

  it('sends secrets on stdin only, one per line, and never in the arguments', async () => {
    const secret = Secret.generate();
    const { exec, calls } = scripted({ stdout: `@baton ${secret.digest.slice(7)}\n` });
    expect(
      await bindTransport(sshTransport('db1', target, { exec }), TEST_BOUNDS).stage([
        { path: '/m/provides/p/r', secret },
      ]),
    ).toEqual([secret.digest]);
    // After the program, which the session's stdin carries first.
    expect(calls[0]!.input).toBe(agentInput(`${secret.reveal()}\n`));
    expect(calls[0]!.args.join(' ')).not.toContain(secret.reveal());
    expect(calls[0]!.args.at(-1)).toContain(`'/m/provides/p/r'`);
  });

  it('ignores what a chatty login shell prints around its answer', async () => {
    const hex = 'a'.repeat(64);
    const { exec } = scripted({
      stdout: `Welcome to db1!\n@baton ${hex} -\n@baton -\n@baton -\nlast login: never\n`,
    });
    expect(await bindTransport(sshTransport('db1', target, { exec }), TEST_BOUNDS).digests(['/m/x'])).toEqual(
      [{ live: `sha256:${hex}`, next: undefined }],
    );
  });

  it("reads each path's rotation record and whether its directory's lock is held, in the same answer", async () => {
    const hex = 'b'.repeat(64);
    const record = '{"v":1,"end":"provides","rotation":"r-1","pair":"p:c","phase":"committing"}';
    const { exec } = scripted({
      stdout: `@baton ${hex} - - - -\n@baton +${record}\n@baton +{"command":"mesh rotate","pid":7}\n@baton - - - - -\n@baton -\n@baton -\n`,
    });
    expect(
      await bindTransport(sshTransport('db1', target, { exec }), TEST_BOUNDS).digests(['/m/p/x', '/m/c/y']),
    ).toEqual([
      { live: `sha256:${hex}`, next: undefined, record, lockedBy: '{"command":"mesh rotate","pid":7}' },
      { live: undefined, next: undefined },
    ]);
  });

  it("names the machine and ssh's own reason when the connection fails", async () => {
    const { exec } = scripted({
      exitCode: 255,
      stderr: 'ssh: Could not resolve hostname db1.internal: Name or service not known\n',
    });
    await expect(
      bindTransport(sshTransport('db1', target, { exec }), TEST_BOUNDS).resolve(),
    ).rejects.toMatchObject({
      machine: 'db1',
      reason: 'ssh failed: Could not resolve hostname db1.internal: Name or service not known',
    });
  });

  it('treats a short answer as a failure rather than guessing', async () => {
    const { exec } = scripted({ stdout: '@baton -\n' });
    await expect(
      bindTransport(sshTransport('db1', target, { exec }), TEST_BOUNDS).readTexts(['/a', '/b']),
    ).rejects.toMatchObject({ reason: 'reading: the machine answered 1 of 2 lines' });
  });

  it('resolves a holder only when the agent says hello on perl 5 in its protocol; no perl 5 is named', async () => {
    const resolve = (stdout: string) =>
      bindTransport(sshTransport('web1', target, { exec: scripted({ stdout }).exec }), TEST_BOUNDS).resolve();
    await expect(
      resolve(`Welcome!\n@baton agent v${AGENT_PROTOCOL} perl 5.036000\n`),
    ).resolves.toBeUndefined();
    await expect(resolve('@baton no-perl\n')).rejects.toThrow(
      'web1: no perl 5 — baton needs it on every holder',
    );
    await expect(resolve(`@baton agent v${AGENT_PROTOCOL} perl 7.000000\n`)).rejects.toThrow(
      'web1: no perl 5 — baton needs it on every holder',
    );
    await expect(resolve(`@baton agent v${AGENT_PROTOCOL + 1} perl 5.036000\n`)).rejects.toThrow(
      `web1: the agent answered in protocol v${AGENT_PROTOCOL + 1}, not baton's v${AGENT_PROTOCOL}`,
    );
    await expect(resolve('ok\n')).rejects.toThrow('web1: resolve: the machine did not answer the hello');
  });
});
