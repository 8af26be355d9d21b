import { writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORE_SCHEMA, dump as stringify, load } from 'js-yaml';

const parseYaml = (text: string): unknown => load(text, { schema: CORE_SCHEMA });
import { z } from 'zod';
import { DEPLOYMENT_ID, DEPLOYMENT_ID_RULE, loadConfig, readConfigFile } from '../../src/config/config.js';
import { BatonError } from '../../src/errors.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const temp = makeTempDir('baton-config-');
afterAll(() => temp.cleanup());

let counter = 0;
function configFile(text: string): string {
  const file = path.join(temp.dir, `baton-${counter++}.yaml`);
  writeFileSync(file, text);
  return file;
}

function refusal(file: string): BatonError {
  try {
    readConfigFile(file);
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return error as BatonError;
  }
  throw new Error(`${file} was accepted`);
}

/**
 * The schema as the test states it: the reader's quick check (which runs without zod) must
 * accept exactly what this accepts, and a refusal must carry zod's own first message.
 */
const REFERENCE = z
  .object({
    deployment: z.string().regex(DEPLOYMENT_ID, DEPLOYMENT_ID_RULE).optional(),
    state_dir: z.string().min(1).optional(),
    store: z.string().min(1).optional(),
    seal_key_file: z.string().min(1).optional(),
    seal: z
      .literal('none', {
        error: 'the only value is "none" (publish unsealed on purpose); to seal, set seal_key_file',
      })
      .optional(),
    inventory: z.string().min(1).optional(),
    journal_dir: z.string().min(1).optional(),
  })
  .strict();

function referenceVerdict(raw: unknown): string | undefined {
  const parsed = REFERENCE.safeParse(raw);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0]!;
  const field =
    issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(top level)');
  return issue.code === 'unrecognized_keys'
    ? `Unknown config field "${issue.keys.join('", "')}".`
    : `Config field "${field}" is invalid: ${issue.message}.`;
}

describe('the config file', () => {
  it('is read with its known fields, relative paths resolved beside the file', () => {
    const file = configFile(
      'deployment: 0123456789abcdef0123456789abcdef\nstate_dir: state\nstore: file:///srv/store\nseal_key_file: seal.key\ninventory: mesh.yaml\njournal_dir: journal\n',
    );
    const config = loadConfig({ config: file }, {}, '/');
    expect(config).toMatchObject({
      source: file,
      deployment: '0123456789abcdef0123456789abcdef',
      stateDir: path.join(temp.dir, 'state'),
      store: 'file:///srv/store',
      sealKeyFile: path.join(temp.dir, 'seal.key'),
      seal: 'key',
      inventory: path.join(temp.dir, 'mesh.yaml'),
      journalDir: path.join(temp.dir, 'journal'),
    });
  });

  it('an empty file or one holding only a comment sets nothing', () => {
    expect(readConfigFile(configFile(''))).toEqual({});
    expect(readConfigFile(configFile('# nothing yet\n'))).toEqual({});
  });

  it('an unknown field is refused naming the field, the file and the known fields', () => {
    const file = configFile('deployment: 0123456789abcdef0123456789abcdef\ndeploymnet: abd\n');
    const error = refusal(file);
    expect(error.code).toBe('config');
    expect(error.what).toBe('Unknown config field "deploymnet".');
    expect(error.where).toBe(file);
    expect(error.next).toContain('deployment, state_dir, store, seal_key_file, seal, inventory, journal_dir');
  });

  it('a deployment id that is not 32 lowercase hex is refused naming the field and the file', () => {
    for (const id of [
      '"../etc"',
      '3f9a0c1e',
      '0123456789ABCDEF0123456789ABCDEF',
      '0123456789abcdef0123456789abcdef0',
    ]) {
      const file = configFile(`deployment: ${id}\n`);
      const error = refusal(file);
      expect(error.code).toBe('config');
      expect(error.what).toBe(
        'Config field "deployment" is invalid: 32 lowercase hex characters (0-9, a-f).',
      );
      expect(error.where).toBe(file);
    }
  });

  it('--deployment that is not 32 lowercase hex is a usage error naming the flag', () => {
    let error: unknown;
    try {
      loadConfig({ deployment: '3F9A0C1E' }, {}, temp.dir);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'usage', where: 'the --deployment flag' });
    expect((error as BatonError).what).toContain('32 lowercase hex');
  });

  it('sealing is stated one way: seal: none or --no-seal, a key file, or neither; never both', () => {
    expect(loadConfig({ config: configFile('seal: none\n') }, {}, '/').seal).toBe('none');
    expect(loadConfig({ seal: false }, {}, temp.dir).seal).toBe('none');
    expect(loadConfig({ sealKeyFile: 'k.key' }, {}, temp.dir)).toMatchObject({
      seal: 'key',
      sealKeyFile: path.join(temp.dir, 'k.key'),
    });
    expect(loadConfig({}, {}, temp.dir).seal).toBe('unstated');
    expect(refusal(configFile('seal: off\n')).what).toBe(
      'Config field "seal" is invalid: the only value is "none" (publish unsealed on purpose); to seal, set seal_key_file.',
    );
    const both = configFile('seal: none\nseal_key_file: k.key\n');
    expect(() => loadConfig({ config: both }, {}, '/')).toThrow(/Sealing is stated twice/);
  });

  it('a field that is not a string, or is empty, is refused naming the field', () => {
    expect(refusal(configFile('store: 12\n')).what).toBe(
      'Config field "store" is invalid: Invalid input: expected string, received number.',
    );
    expect(refusal(configFile('journal_dir: .nan\n')).what).toBe(
      'Config field "journal_dir" is invalid: Invalid input: expected string, received NaN.',
    );
    expect(refusal(configFile('state_dir: -.inf\n')).what).toBe(
      'Config field "state_dir" is invalid: Invalid input: expected string, received -Infinity.',
    );
    expect(refusal(configFile('inventory: ""\n')).what).toBe(
      'Config field "inventory" is invalid: Too small: expected string to have >=1 characters.',
    );
    expect(refusal(configFile('- a\n- b\n')).what).toBe(
      'Config field "(top level)" is invalid: Invalid input: expected object, received array.',
    );
  });

  it('a YAML 1.1 set or ordered map is refused naming its tag, and a date-like value is the string YAML 1.2 reads', () => {
    const omap = configFile('%YAML 1.1\n---\n!!omap [ store: file:///srv ]\n');
    expect(refusal(omap).what).toMatch(/^The config file is not valid YAML: unknown tag .*omap/);
    expect(refusal(configFile('%YAML 1.1\n---\n!!set { store }\n')).what).toMatch(
      /^The config file is not valid YAML: unknown tag .*set/,
    );
    expect(readConfigFile(configFile('store: 2001-12-14\n'))).toEqual({ store: '2001-12-14' });
  });

  it('a file that is not YAML is refused naming the file and the line', () => {
    const file = configFile('store: [\n');
    const error = refusal(file);
    expect(error.what).toMatch(/^The config file is not valid YAML: .*\(2:1\)$/);
    expect(error.where).toBe(file);
  });

  it('says for any mapping exactly what the zod schema it replaces said', () => {
    const fieldValue = fc.oneof(
      fc.constantFrom(
        '',
        'abc',
        '0123abcd',
        '0123456789abcdef0123456789abcdef',
        '0123456789ABCDEF0123456789ABCDEF',
        'none',
        'a b',
        '../x',
        '.hidden',
        'x'.repeat(64),
        'x'.repeat(65),
      ),
      fc.string({ maxLength: 8 }),
      fc.integer(),
      fc.double(),
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
      fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
    );
    const known = fc.record(
      {
        deployment: fieldValue,
        state_dir: fieldValue,
        store: fieldValue,
        seal_key_file: fieldValue,
        seal: fieldValue,
        inventory: fieldValue,
        journal_dir: fieldValue,
      },
      { requiredKeys: [] },
    );
    const unknown = fc.dictionary(
      fc.oneof(fc.constantFrom('deploymnet', 'foo', '__proto__', 'Store', ''), fc.string({ maxLength: 6 })),
      fieldValue,
      { maxKeys: 2 },
    );
    const document = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(known, unknown).map(([k, u]) => ({ ...u, ...k })) },
      { weight: 1, arbitrary: fieldValue },
    );
    fc.assert(
      fc.property(document, (raw) => {
        const text = stringify(raw);
        const file = configFile(text);
        // The reference judges what the reader judges: the file as YAML parses it, empty = {}.
        const expected = referenceVerdict(parseYaml(text) ?? {});
        let actual: string | undefined;
        try {
          readConfigFile(file);
        } catch (error) {
          actual = (error as BatonError).what;
        }
        expect(actual).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the CLI with a bad config file', () => {
  beforeAll(() => assertBuilt());

  it('exits 2 naming the unknown field and the file, and writes nothing', async () => {
    const state = makeTempDir('baton-config-state-');
    try {
      const file = configFile(
        `deployment: 0123456789abcdef0123456789abcdef\nstate_dir: ${state.dir}\nstore: file://${state.dir}/store\nstroe: typo\n`,
      );
      const before = snapshotDir(state.dir);
      const run = await runBaton(['--config', file, 'status', '--json'], { cwd: temp.dir });
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toContain('Unknown config field "stroe"');
      expect(run.stderr).toContain(file);
      expect(snapshotDir(state.dir)).toEqual(before);
    } finally {
      state.cleanup();
    }
  });
});
