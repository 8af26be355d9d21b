// The linter (docs/testing.md, "Formatting and linting"): typescript-eslint's type-checked
// rules. They are not cosmetic here: a promise nobody awaits on a stream that fails is how a
// rotation died mid-roll-back when the operator's terminal dropped.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'coverage/', 'bin/', '**/*.mjs', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // vitest.config.ts sits outside tsconfig's include (tsc need not check the runner's config).
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A `default:` is the author's "every other case, on purpose"; a switch without one must
      // still name every member, so a new state or event cannot slip past it.
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unnecessary-condition': 'error',
      // Ports (Transport, Store, the fakes in test/) are async by contract: an implementation that
      // needs no await stays async so a throw still arrives as a rejection, as callers expect.
      '@typescript-eslint/require-await': 'off',
      // `const { key: _key, ...rest } = x` is how a test drops a field: the `_` says "unused on purpose".
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // A promise that passes on what it caught (`(error: unknown) => reject(error)`) keeps its reason as it came.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Terminal code and its tests match ESC/CSI sequences (\x1b, \x07) on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    files: ['test/**'],
    rules: {
      // Tests read the CLI's JSON (JSON.parse: any) and hold its shape with expect(); a type
      // declared first would only restate the assertion that follows it.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Fixtures hand out closures (baton, stop, log) that their interfaces declare as methods.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
