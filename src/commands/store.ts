/**
 * `baton store check`: does the store enforce conditional writes? It probes create-only
 * (If-None-Match: *) AND replace-if-unchanged (If-Match: a stale ETag refused, the current one
 * accepted) on a probe object, removes every version of it, prints the answer, and records it
 * per store where every state dir on this host reads it (src/store/store-check-record.ts): a
 * publish to a store known not to enforce is refused. Exit 0 when enforced, 3 when not — a
 * store that ignores preconditions lets two controllers publishing at once overwrite each
 * other. On a versioned bucket it also lists the versions of the document that hold `ca.key`
 * in the clear, with the command that removes each one.
 */
import { asBatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { requireStore, stateDirFor, storeOptionsOf } from '../config/config.js';
import { clearKeyMaterial } from '../share/clear-key-scan.js';
import type { DocumentVersions } from '../store/store.js';
import { action, type Register } from './context.js';

export const registerStore: Register = (program, ctx) => {
  const store = program.command('store').description('the store where the authority is published');
  store
    .command('check')
    .description(
      'does the store enforce conditional writes? (writes and removes a probe object); lists versions holding ca.key in the clear',
    )
    .action(
      action(ctx, async () => {
        const config = ctx.config();
        const url = requireStore(config);
        const stateDir = stateDirFor(config);
        const [{ openStore }, { writeStoreCheck }, { unenforcedOverrideValue }] = await Promise.all([
          import('../store/open-store.js'),
          import('../store/store-check-record.js'),
          import('../share/store-guard.js'),
        ]);
        const target = await openStore(url, storeOptionsOf(config));
        const check = await target.checkConditionalWrites();
        let recorded: string;
        try {
          recorded = await writeStoreCheck(stateDir, url, check, new Date());
        } catch (error) {
          throw asBatonError(error, {
            what: 'The check ran, but its result could not be recorded',
            where: stateDir,
            next: "Check that the state dir's parent (where store-checks/ is kept) exists and is writable by this user.",
          });
        }
        const lines = check.enforced
          ? ['✓ conditional writes are enforced', check.detail]
          : [
              `! conditional writes are NOT enforced (failed: ${check.failed.join(', ')})`,
              check.detail,
              'baton publishes with If-None-Match / If-Match so that a controller never overwrites what another just published; this store would let that happen, so publishing to it is refused. Use a store that honours them (AWS S3, MinIO, Ceph RGW, R2) in production.',
              `override value: ${unenforcedOverrideValue(url)} (to publish to this store anyway, knowing the risk: add --store-unenforced with this value)`,
            ];
        const versions = target.documentVersions
          ? clearVersionLines(await target.documentVersions(), target.location, url)
          : { lines: [], found: 0 };
        if (check.etagUnstable)
          lines.push(
            '! this store gives the same bytes a different ETag: every publish that replaces the document would be refused though nothing changed (see above)',
          );
        lines.push(...versions.lines);
        ctx.stdout.write(
          `${lines.join('\n')}\nRecorded in ${recorded} (every state dir beside ${stateDir} reads it; status shows it).\n`,
        );
        // Versions in the clear are listed, not an exit code: a deployment that publishes unsealed
        // on purpose has them by design.
        return check.enforced && !check.etagUnstable ? EXIT_OK : EXIT_CODES['action-needed'];
      }),
    );
};

/** The versions that hold key material in the clear, each with the command that removes it. */
function clearVersionLines(
  result: DocumentVersions,
  location: string,
  url: string,
): { lines: string[]; found: number } {
  if (!result.listed)
    return {
      lines: [
        `(the document's versions could not be listed, so old versions in the clear were not looked for: ${result.why})`,
      ],
      found: 0,
    };
  // A version the store encrypts at rest (an SSM SecureString under KMS) is not in the clear:
  // on SSM baton's own seal is refused, and KMS is what seals every version.
  const found = result.versions.flatMap((version) => {
    const names = version.body && version.atRest?.encrypted !== true ? clearKeyMaterial(version.body) : [];
    return names.length > 0 ? [{ version, names }] : [];
  });
  const ssm = /^ssm:\/\/\//.test(url);
  if (found.length === 0)
    return {
      lines: [
        `✓ none of the ${result.versions.length} stored version(s) of ${location} holds key material in the clear${ssm && result.versions.length > 0 ? ' (each is a SecureString under KMS)' : ''}`,
      ],
      found: 0,
    };
  if (ssm) {
    const name = location.replace(/^ssm:\/\//, '');
    return {
      lines: [
        `! ${found.length} stored version(s) of ${location} are not SecureStrings and hold key material in the clear (anyone who can read the parameter's history has the CA key):`,
        ...found.map(
          ({ version, names }) =>
            `  version ${version.versionId}${version.isLatest ? ' (current)' : ''}${version.lastModified ? ` ${version.lastModified.toISOString()}` : ''} (${version.atRest?.words ?? 'type not said'}): ${names.join(', ')}`,
        ),
        `Parameter Store cannot delete one version: delete the parameter with its whole history (aws ssm delete-parameter --name ${name}), then publish again from a controller that holds the authority (baton writes a SecureString). Consider the CA key exposed and rotate it.`,
      ],
      found: found.length,
    };
  }
  const bucket = /^s3:\/\/([^/?]+)/.exec(url)?.[1] ?? '<bucket>';
  const key = location.replace(/^s3:\/\/[^/]+\//, '');
  const lines = [
    `! ${found.length} stored version(s) of ${location} hold key material in the clear (anyone who can read the bucket's versions has the CA key):`,
    ...found.map(
      ({ version, names }) =>
        `  ${version.versionId}${version.isLatest ? ' (current)' : ''}${version.lastModified ? ` ${version.lastModified.toISOString()}` : ''}: ${names.join(', ')}`,
    ),
    'Remove each old one with: aws s3api delete-object --bucket ' +
      bucket +
      ' --key ' +
      key +
      ' --version-id <VERSION>',
    'A current version in the clear is replaced by publishing sealed (seal_key_file) first; then remove the old one. Consider the CA key exposed and rotate it.',
  ];
  return { lines, found: found.length };
}
