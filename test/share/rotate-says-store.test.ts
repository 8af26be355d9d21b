/**
 * After `baton ca rotate` on a host whose deployment keeps its authority in a
 * store, the words say what the other side needs — the store is behind, billet will not start on
 * this state dir until it is published, and the exact command — and status says the store is
 * behind. Run in-process (the `ca` command on a directory store); nothing is published by rotate.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { registerCa } from '../../src/commands/ca.js';
import type { CliContext } from '../../src/commands/context.js';
import { loadConfig } from '../../src/config/config.js';
import { firstController, look } from '../../src/share/actions.js';
import { openShareContext } from '../../src/share/share-context.js';
import { verdictWords } from '../../src/share/verdict-words.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = 'aaaabbbbccccdddd0000111122223333';
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
  process.exitCode = undefined;
});

function context(stateDir: string, store: string | undefined): { ctx: CliContext; output: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return {
    ctx: {
      config: () =>
        loadConfig(
          { stateDir, deployment: DEPLOYMENT, ...(store ? { store, seal: false } : {}) },
          {},
          stateDir,
        ),
      stdout: stream as unknown as NodeJS.WriteStream,
      stderr: stream as unknown as NodeJS.WriteStream,
      env: { BATON_CONFIG: '' },
      suggester: () => PLAIN_SUGGESTER,
    },
    output: () => text,
  };
}

async function ca(ctx: CliContext, ...args: string[]): Promise<void> {
  const program = new Command().exitOverride();
  registerCa(program, ctx);
  await program.parseAsync(['ca', ...args], { from: 'user' });
}

async function firstControllerOn(): Promise<{ stateDir: string; storeUrl: string; storeDir: string }> {
  const { dir, cleanup } = makeTempDir('baton-rotate-store-');
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  mkdirSync(stateDir, { recursive: true });
  const storeDir = path.join(dir, 'store');
  const storeUrl = `file://${storeDir}`;
  const share = await openShareContext(
    loadConfig({ stateDir, deployment: DEPLOYMENT, store: storeUrl, seal: false }, {}, dir),
  );
  await firstController(share);
  return { stateDir, storeUrl, storeDir };
}

describe('a rotation says what the other side needs', () => {
  it('with a store: the store is BEHIND, billet will not start until it is published, and the push is named; nothing is published', async () => {
    const { stateDir, storeUrl, storeDir } = await firstControllerOn();
    const storeBefore = snapshotDir(storeDir);
    const { ctx, output } = context(stateDir, storeUrl);
    await ca(ctx, 'rotate');
    expect(process.exitCode ?? 0).toBe(0);
    const said = output();
    expect(said).toContain('it is BEHIND this host');
    expect(said).toContain('billet will not start on this state dir');
    expect(said).toContain('Publish it now: `baton sync --push`');
    expect(snapshotDir(storeDir)).toEqual(storeBefore);

    // status: the store is behind this host, in its words.
    const share = await openShareContext(ctx.config());
    const words = verdictWords((await look(share)).verdict, { fingerprints: true });
    expect(words.label).toBe('not published yet');
    expect(words.headline).toContain('The store is behind this host');
    expect(words.next).toContain('sync --push');
  });

  it('without a store: says none was asked and what a billet deployment needs', async () => {
    const { stateDir } = await firstControllerOn();
    const { ctx, output } = context(stateDir, undefined);
    await ca(ctx, 'rotate');
    expect(output()).toContain('No store is configured, so none was asked.');
    expect(output()).toContain('`billet ca sync --push`');
  });

  it('a retire while the store is behind leaves the store as it is and names the push', async () => {
    const { stateDir, storeUrl, storeDir } = await firstControllerOn();
    const { ctx, output } = context(stateDir, storeUrl);
    await ca(ctx, 'rotate');
    const previous = /Previous: SHA256:(\S{8})/.exec(output())![1]!;
    const storeBefore = snapshotDir(storeDir);
    await ca(ctx, 'retire', '--confirm', previous);
    expect(output()).toContain('was left as it is');
    expect(output()).toContain(
      "The other side needs this host's authority: publish it with `baton sync --push`",
    );
    expect(snapshotDir(storeDir)).toEqual(storeBefore);
  });
});
