/**
 * Property tests on the document decoder (fast-check): random mutations of a valid document —
 * bytes flipped, cut or inserted; JSON values replaced, removed or added anywhere in the tree;
 * sealed payloads disturbed — never yield an accepted document that carries anything but the
 * original authority, and never throw anything but a BatonError. Then the same through
 * `adopt` on a real state dir: a mutated document installs the original or nothing.
 */
import { outside } from '../../src/outside-text.js';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBatonError } from '../../src/errors.js';
import { decodeDocument, encodeDocument } from '../../src/share/document.js';
import { adopt } from '../../src/share/actions.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { systemClock, type AuthorityFiles } from '../../src/authority/index.js';
import { DOCUMENT_FORMAT } from '../../src/share/types.js';
import { makeBadDocuments, type Corpus } from '../helpers/bad-documents.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'pr0pertyt3stpr0pertyt3stpr0pert';
const WHERE = 'memory://property/authority.json';

let corpus: Corpus;
let sealed: Uint8Array;
let tmp: { dir: string; cleanup: () => void };
const figures = {
  byteMutations: 0,
  jsonMutations: 0,
  sealedMutations: 0,
  adoptTrials: 0,
  accepted: 0,
  refused: 0,
};

beforeAll(async () => {
  corpus = await makeBadDocuments(DEPLOYMENT);
  tmp = makeTempDir('baton-props-');
  const json = JSON.parse(Buffer.from(corpus.valid).toString('utf8')) as Record<string, unknown>;
  const files: AuthorityFiles = {};
  for (const [name, b64] of Object.entries(json.files as Record<string, string>)) {
    files[name as keyof AuthorityFiles] = new Uint8Array(Buffer.from(b64, 'base64'));
  }
  sealed = await encodeDocument(
    {
      format: DOCUMENT_FORMAT,
      deployment: DEPLOYMENT,
      fingerprint: corpus.fingerprint,
      previousFingerprint: null,
      publishedAt: outside(json.published_at as string),
      publishedBy: outside(json.published_by as string),
    },
    files,
    corpus.sealKey,
  );
});

afterAll(() => {
  ifSet(tmp)?.cleanup();
  console.log(`decoder-properties figures: ${JSON.stringify(figures)}`);
});

/** The property: refused with a BatonError, or accepted carrying EXACTLY the original files. */
async function decodesToOriginalOrRefuses(body: Uint8Array, sealKey?: Uint8Array): Promise<void> {
  let opened;
  try {
    opened = await decodeDocument(body, { deployment: DEPLOYMENT, where: WHERE, sealKey });
  } catch (error) {
    if (!isBatonError(error))
      throw new Error(`the decoder threw a non-BatonError: ${String(error)}`, { cause: error });
    // A seal that does not open under a readable, valid header cannot be told from another key's
    // (GCM): 'sealed-with-another-key' is a refusal too, and never opens anything.
    expect(error.code).toBe('refused');
    expect(['document-refused', 'sealed-with-another-key']).toContain(error.reason);
    expect(error.what.length).toBeGreaterThan(0);
    figures.refused += 1;
    return;
  }
  figures.accepted += 1;
  expect(opened.current.fingerprint).toBe(corpus.fingerprint);
  for (const name of ['ca.crt', 'ca.key'] as const) {
    expect(Buffer.from(opened.files[name]!).equals(Buffer.from(corpus.files[name]!))).toBe(true);
  }
  expect(opened.files['ca-previous.key']).toBeUndefined();
}

const byteMutation = (length: number) =>
  fc.oneof(
    fc.record({
      kind: fc.constant('flip' as const),
      at: fc.nat({ max: length - 1 }),
      xor: fc.integer({ min: 1, max: 255 }),
    }),
    fc.record({
      kind: fc.constant('cut' as const),
      at: fc.nat({ max: length - 1 }),
      len: fc.integer({ min: 1, max: 64 }),
    }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat({ max: length }),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    }),
  );

type ByteMutation =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'cut'; at: number; len: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array };

function applyBytes(body: Uint8Array, mutations: readonly ByteMutation[]): Uint8Array {
  let out = Buffer.from(body);
  for (const m of mutations) {
    const at = Math.min(m.at, out.length);
    if (m.kind === 'flip' && at < out.length) out[at]! ^= m.xor;
    else if (m.kind === 'cut') out = Buffer.concat([out.subarray(0, at), out.subarray(at + m.len)]);
    else if (m.kind === 'insert')
      out = Buffer.concat([out.subarray(0, at), Buffer.from(m.bytes), out.subarray(at)]);
  }
  return new Uint8Array(out);
}

/** Every path to a value in a JSON tree. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

type JsonMutation =
  | { kind: 'replace'; pick: number; value: unknown }
  | { kind: 'delete'; pick: number }
  | { kind: 'add'; pick: number; key: string; value: unknown }
  | { kind: 'string-edit'; pick: number; at: number; char: string };

const jsonMutation = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('add' as const),
    pick: fc.nat(),
    key: fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('files', 'sealed', 'ca.key', 'ca-previous.key', 'fingerprint', 'format', '__proto__'),
    ),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({
    kind: fc.constant('string-edit' as const),
    pick: fc.nat(),
    at: fc.nat(),
    char: fc.string({ minLength: 1, maxLength: 1 }),
  }),
);

function applyJson(body: Uint8Array, mutation: JsonMutation): Uint8Array {
  const root = JSON.parse(Buffer.from(body).toString('utf8')) as unknown;
  const paths = pathsOf(root);
  const target = paths[mutation.pick % paths.length]!;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- walks whatever JSON the mutation reached
  const parentOf = (p: (string | number)[]) => p.slice(0, -1).reduce<any>((node, k) => node[k], root);
  let next: unknown = root;
  if (target.length === 0) {
    if (mutation.kind === 'replace') next = mutation.value;
    else if (mutation.kind === 'add' && root && typeof root === 'object')
      Object.defineProperty(root, mutation.key, {
        value: mutation.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  } else {
    const parent = parentOf(target);
    const key = target[target.length - 1]!;
    const current = parent[key];
    if (mutation.kind === 'replace') parent[key] = mutation.value;
    else if (mutation.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
    } else if (mutation.kind === 'add' && current && typeof current === 'object' && !Array.isArray(current)) {
      Object.defineProperty(current, mutation.key, {
        value: mutation.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (mutation.kind === 'string-edit' && typeof current === 'string' && current.length > 0) {
      const at = mutation.at % current.length;
      parent[key] = current.slice(0, at) + mutation.char + current.slice(at + 1);
    }
  }
  return new TextEncoder().encode(JSON.stringify(next));
}

describe('the decoder under random mutation', () => {
  it('byte-level mutations of a valid document are refused or decode to the original authority', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(byteMutation(corpus.valid.length), { minLength: 1, maxLength: 4 }),
        async (mutations) => {
          figures.byteMutations += 1;
          await decodesToOriginalOrRefuses(applyBytes(corpus.valid, mutations));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('JSON-level mutations anywhere in the tree are refused or decode to the original authority', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(jsonMutation, { minLength: 1, maxLength: 3 }), async (mutations) => {
        figures.jsonMutations += 1;
        let body = corpus.valid;
        for (const m of mutations) body = applyJson(body, m);
        await decodesToOriginalOrRefuses(body);
      }),
      { numRuns: 400 },
    );
  });

  it('mutations of a sealed document never open to anything but the original authority', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.array(byteMutation(sealed.length), { minLength: 1, maxLength: 3 }).map((m) => ({ bytes: m })),
          fc.array(jsonMutation, { minLength: 1, maxLength: 2 }).map((m) => ({ json: m })),
        ),
        async (mutation) => {
          figures.sealedMutations += 1;
          let body = sealed;
          if ('bytes' in mutation) body = applyBytes(body, mutation.bytes);
          else for (const m of mutation.json) body = applyJson(body, m);
          await decodesToOriginalOrRefuses(body, corpus.sealKey);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('adopt under random mutation', () => {
  it('a fresh host adopting a mutated document installs the original authority or nothing', async () => {
    let trial = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(jsonMutation, { minLength: 1, maxLength: 2 }),
        fc.array(byteMutation(corpus.valid.length), { maxLength: 2 }),
        async (json, bytes) => {
          figures.adoptTrials += 1;
          let body = corpus.valid;
          for (const m of json) body = applyJson(body, m);
          body = applyBytes(body, bytes);
          const stateDir = path.join(tmp.dir, `host-${(trial += 1)}`);
          mkdirSync(stateDir, { mode: 0o700 });
          const before = snapshotDir(stateDir);
          const store = new MemoryStore({ document: body });
          let outcome;
          try {
            outcome = await adopt({
              stateDir,
              deployment: DEPLOYMENT,
              store,
              clock: systemClock,
              host: 'property',
              noSeal: true,
            });
          } catch (error) {
            if (!isBatonError(error))
              throw new Error(`adopt threw a non-BatonError: ${String(error)}`, { cause: error });
            // Refused: nothing of the authority is on disk (the lock file is the only thing adopt may create).
            const after = snapshotDir(stateDir);
            delete after['ca.lock'];
            expect(after).toEqual(before);
            return;
          }
          expect(outcome).toEqual({ kind: 'installed', fingerprint: corpus.fingerprint });
        },
      ),
      { numRuns: 150 },
    );
  });
});
