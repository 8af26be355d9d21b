import { randomBytes } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A secret shaped like the mesh's: 256 random bits as 43 base64url characters. */
export const secret = (): string => randomBytes(32).toString('base64url');

/** A role name no other test uses: the PostgreSQL sandbox outlives one test. */
export const uniqueRole = (stem: string): string => `${stem}_${randomBytes(4).toString('hex')}`;

/**
 * Delivers `value` as `<dir>/<role>` the way the mesh commits one: a temp file beside it (a
 * dotfile, which the provisioner never reads as a role), then a rename over the live name.
 */
export function deliverFile(dir: string, role: string, value: string): void {
  const temp = path.join(dir, `.${role}.tmp`);
  writeFileSync(temp, value, { mode: 0o600 });
  renameSync(temp, path.join(dir, role));
}
