/**
 * A native module that cannot be loaded is named as such (src/fs/flock.ts): a tree installed
 * under Node 20 and run on Node 22 failed every lock-taking command with "The authority lock
 * cannot be taken (ERR_DLOPEN_FAILED) … Check the file system supports flock". The words name
 * the module, the Node.js it was built for, the one running, and `npm rebuild fs-ext`. The
 * real run on Node 22 and 24 is scripts/node-matrix-smoke.mjs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeModuleProblem, NativeModuleError } from '../../src/fs/flock.js';

/** Node's own error for a module built under Node 20, loaded by Node 22 (as it printed it). */
function builtForAnotherNode(file: string): Error {
  const error = new Error(
    `The module '${file}'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 127. Please try re-compiling or re-installing\nthe module (for instance, using \`npm rebuild\` or \`npm install\`).`,
  ) as NodeJS.ErrnoException;
  error.code = 'ERR_DLOPEN_FAILED';
  return error;
}

describe('a native module that cannot be loaded', () => {
  it('built for another Node: names fs-ext, both ABIs with their Node.js, and npm rebuild in its tree', () => {
    const problem = nativeModuleProblem(
      builtForAnotherNode('/opt/baton/node_modules/fs-ext/build/Release/fs_ext.node'),
      'fs-ext',
      { version: 'v22.23.3', modules: '127' },
    );
    expect(problem).toBeInstanceOf(NativeModuleError);
    expect(problem?.what).toBe(
      'The native module fs-ext was built for Node.js 20 (NODE_MODULE_VERSION 115), and this is Node.js v22.23.3 (NODE_MODULE_VERSION 127).',
    );
    expect(problem?.next).toBe(
      'Run `npm rebuild fs-ext` in /opt/baton with this Node.js (v22.23.3), or run baton with the Node.js it was installed with.',
    );
    expect(problem?.message).not.toMatch(/file system/);
  });

  it('a real dlopen failure (not a shared object) is named with Node’s first line, its path shown safely', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-native-'));
    try {
      const file = path.join(dir, 'node_modules', 'fs-ext', 'fs_ext\u001b[2J.node');
      const real = (() => {
        try {
          writeFileSync(path.join(dir, 'bogus.node'), 'not an ELF file');
          process.dlopen({ exports: {} }, path.join(dir, 'bogus.node'));
        } catch (error) {
          return error as NodeJS.ErrnoException;
        }
        throw new Error('dlopen of a text file succeeded');
      })();
      expect(real.code).toBe('ERR_DLOPEN_FAILED');
      const problem = nativeModuleProblem(real, 'fs-ext', { version: 'v24.0.0', modules: '137' });
      expect(problem?.what).toMatch(
        /^The native module fs-ext cannot be loaded on Node\.js v24\.0\.0 \(NODE_MODULE_VERSION 137\): .*bogus\.node/,
      );
      expect(problem?.next).toContain('npm rebuild fs-ext');
      // A hostile path in Node's words never reaches the terminal raw.
      const hostile = nativeModuleProblem(builtForAnotherNode(file));
      expect(hostile?.next).toContain(`in ${dir}`);
      const mangled = nativeModuleProblem(
        Object.assign(new Error(`${file}: invalid ELF header`), { code: 'ERR_DLOPEN_FAILED' }),
      );
      expect(mangled?.what).not.toContain('\u001b');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('not installed: says so; any other error is not its business', () => {
    const missing = Object.assign(new Error("Cannot find module 'fs-ext'"), { code: 'MODULE_NOT_FOUND' });
    expect(nativeModuleProblem(missing)?.what).toBe(
      "The native module fs-ext is not installed (Cannot find module 'fs-ext').",
    );
    expect(nativeModuleProblem(Object.assign(new Error('nope'), { code: 'ENOLCK' }))).toBeUndefined();
    expect(
      nativeModuleProblem(
        Object.assign(new Error("Cannot find module 'other'"), { code: 'MODULE_NOT_FOUND' }),
      ),
    ).toBeUndefined();
  });
});
