/**
 * The fields a JSON docs page lists (docs/status-json.md, docs/mesh-status.md, docs/cli.md's
 * JSON output), read from its ```jsonc examples, and the fields an object the code built has:
 * test/docs/json-fields.test.ts compares the two, as docs-tables.ts does for the tables, so a
 * field added to the code without its line in the docs (or left in the docs after it went)
 * fails the suite.
 */

/**
 * Shapes several objects share, documented once: an error (src/app/error-json.ts) and a next
 * step (src/next-step.ts, stepJson). Their fields are named from the shape, wherever it sits.
 */
const SHARED: Readonly<Record<string, string>> = {
  error: 'error',
  next_step: 'step',
  'next_steps[]': 'step',
};

/** Every field path of `value`: `published.neighbours[].location`; arrays' items as `[]`. */
export function jsonFieldPaths(value: unknown, at = ''): Set<string> {
  const paths = new Set<string>();
  const visit = (node: unknown, path: string) => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, `${path}[]`);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
      const here = path === '' ? key : `${path}.${key}`;
      paths.add(here);
      const last = Array.isArray(child) ? `${key}[]` : key;
      const shared = path === '' ? undefined : SHARED[last];
      if (shared !== undefined) {
        // The shape's own fields, once, under its name.
        if (Array.isArray(child)) for (const item of child) visit(item, shared);
        else visit(child, shared);
      } else visit(child, here);
    }
  };
  visit(value, at);
  return paths;
}

/** The ```jsonc and ```json blocks of a page, comments (` // …` after a space) removed, parsed. */
export function docsJsonExamples(markdown: string): unknown[] {
  const blocks = [...markdown.matchAll(/```jsonc?\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.map((block, i) => {
    const json = block.replace(/(^|\s)\/\/ .*$/gm, '').replace(/^\s*\/\/.*$/gm, '');
    try {
      return JSON.parse(json) as unknown;
    } catch (error) {
      throw new Error(`JSON example ${i + 1} of the page does not parse: ${(error as Error).message}`, {
        cause: error,
      });
    }
  });
}

/** The fields a page's examples list, paths as jsonFieldPaths gives them. */
export function docsJsonFields(markdown: string): Set<string> {
  const fields = new Set<string>();
  for (const example of docsJsonExamples(markdown))
    for (const path of jsonFieldPaths(example)) fields.add(path);
  return fields;
}
