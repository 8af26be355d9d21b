/**
 * The two controllers the screenshots show (ctl-a and ctl-b, one file store), set up the same way by
 * scripts/screenshots.ts, which shoots them, and by test/components/screenshots.test.tsx, which
 * renders the same screens and compares: one set-up, so the pictures and the test cannot drift.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface ShotHosts {
  readonly deployment: string;
  /** The store directory both controllers use. */
  readonly store: string;
  readonly storeUrl: string;
  /** ctl-a: makes the authority and publishes it. */
  readonly a: string;
  /** ctl-b: in sync with ctl-a from the store. */
  readonly b: string;
}

/**
 * Under `tmp`, a directory per controller with its baton.yaml (so the screens show the short
 * invocation an operator with a config file types), then ctl-a makes the authority and both sync.
 * `baton` runs the CLI in a directory; an exit 3 ("action needed") must not reject.
 */
export async function shotHosts(
  tmp: string,
  baton: (cwd: string, args: string[]) => Promise<unknown>,
): Promise<ShotHosts> {
  const deployment = '7f3a9c2e5b1d4f608a2c9e7b3d5f1a04';
  const store = path.join(tmp, 'store');
  mkdirSync(store, { mode: 0o700 });
  const storeUrl = `file://${store}`;
  const host = (name: string) => {
    const dir = path.join(tmp, name);
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(
      path.join(dir, 'baton.yaml'),
      `deployment: ${deployment}\nstate_dir: ./state\nstore: ${storeUrl}\nseal: none\n`,
    );
    return dir;
  };
  const a = host('ctl-a');
  const b = host('ctl-b');
  await baton(a, ['ca', 'init', '--yes']);
  await baton(a, ['sync']);
  await baton(a, ['store', 'check']);
  await baton(b, ['sync']);
  await baton(b, ['store', 'check']);
  return { deployment, store, storeUrl, a, b };
}
