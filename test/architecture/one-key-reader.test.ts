/**
 * Every view reads keys through the one reader (components/hooks/use-key-stream.ts): a
 * component calling Ink's useInput itself would take `jj` as one unknown key again and let the
 * keys after an Enter reach the screen that Enter opened.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : /\.tsx?$/.test(name) ? [full] : [];
  });
}

describe('keys', () => {
  it("reach components only through useKeyStream: no other file calls Ink's useInput", () => {
    const files = [...sources(path.join(REPO, 'components')), ...sources(path.join(REPO, 'src'))];
    expect(files.length).toBeGreaterThan(50);
    const callers = files
      .filter((file) => /\buseInput\s*\(/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(REPO, file));
    expect(callers).toEqual([path.join('components', 'hooks', 'use-key-stream.ts')]);
  });
});
