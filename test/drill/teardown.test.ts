import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTeardown } from '../../src/sandbox/teardown.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

describe("the sandbox's undo list", () => {
  it('undoes newest first and removes the temp dir last, after the servers that write into it', async () => {
    const { dir, cleanup } = makeTempDir('baton-teardown-');
    try {
      const order: string[] = [];
      const teardown = makeTeardown();
      teardown.removeDir(dir);
      teardown.add('stop S3', () => {
        order.push(`S3 (dir still there: ${existsSync(dir)})`);
      });
      teardown.add('stop PostgreSQL', async () => {
        order.push('PostgreSQL');
      });
      expect(await teardown.run()).toEqual([]);
      expect(order).toEqual(['PostgreSQL', 'S3 (dir still there: true)']);
      expect(existsSync(dir)).toBe(false);
    } finally {
      cleanup();
    }
  });

  it('a failing undo is reported by name, its last resort runs, and the others still run', async () => {
    const ran: string[] = [];
    const teardown = makeTeardown();
    teardown.add('first', () => {
      ran.push('first');
    });
    teardown.add(
      'broken',
      () => {
        throw new Error('port still bound');
      },
      () => ran.push('broken: last resort'),
    );
    expect(await teardown.run()).toEqual(['broken: port still bound']);
    expect(ran).toEqual(['broken: last resort', 'first']);
  });

  it('runs once: a second run (Ctrl-C during a quit) waits for the same teardown', async () => {
    let count = 0;
    const teardown = makeTeardown();
    teardown.add('count', () => {
      count += 1;
    });
    await Promise.all([teardown.run(), teardown.run()]);
    expect(count).toBe(1);
  });

  it('something started after the teardown ran is undone at once instead of leaking', async () => {
    const { dir, cleanup } = makeTempDir('baton-teardown-');
    try {
      const teardown = makeTeardown();
      await teardown.run();
      const late = path.join(dir, 'late');
      mkdirSync(late);
      writeFileSync(path.join(late, 'file'), 'x');
      teardown.removeDir(late);
      await expect.poll(() => existsSync(late), { timeout: 10_000 }).toBe(false);
    } finally {
      cleanup();
    }
  });
});
