// The build rewrites a few dependencies' sources (string-width, yoga, Ink, the text splitters).
// Each rewrite names the exact text it replaces, and a dependency update that moved it must stop
// the build rather than ship the package unrewritten (or rewritten twice).

/** `source` with the one occurrence of `from` replaced; throws naming `what` and the helper to update otherwise. */
export function replaceOnce(source, from, to, { what, update }) {
  if (source.split(from).length !== 2) throw new Error(`${what}: expected exactly one "${from.slice(0, 80)}"; update ${update} for this version.`);
  return source.replace(from, to);
}
