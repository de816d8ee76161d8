// npm run lint (eslint -c .build/eslint.config.mjs): typescript-eslint's recommended rules over all code,
// plus a function-length limit on the code that ships (the trainer, the extension, the panels, the examples),
// and type-aware promise rules there (a promise nobody awaits or catches loses its error).
// Formatting is Prettier's job (npm run format), not a lint rule.
import * as path from 'node:path';
import js from '@eslint/js';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'test-output/',
      '.rollout/',
      'test/fixtures/**/generated/',
      'test/grammar/vendor/',
      'examples/*/data/',
      'examples/*/model/',
      'test/bench/*/data/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_name` marks a parameter or binding kept for its position or to drop it from a rest spread.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // One import per module: a type-only name goes in the same import with an inline `type`.
      'no-duplicate-imports': ['error', { includeExports: false }],
    },
  },
  {
    // Type-aware rules on the shipped code: a promise that is neither awaited nor caught (its
    // rejection is lost or crashes the process), an async function where a void callback is
    // expected (an event handler, a timer: nobody sees its rejection), and `await` on a
    // non-promise. Each file is typed by its runtime's tsconfig (the first that holds it: the
    // examples are in the trainer's). Not the projectService: it would type the examples by the
    // root tsconfig, a program of every test too, and take ~70% longer (measured on 2 cores).
    files: ['trainer/**/*.ts', 'extension/**/*.ts', 'webview/**/*.ts', 'examples/**/*.ts'],
    languageOptions: {
      parserOptions: {
        project: ['trainer/tsconfig.json', 'extension/tsconfig.json', 'webview/tsconfig.json'],
        tsconfigRootDir: path.resolve(import.meta.dirname, '..'),
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // Shipped code reads in small functions with one job. 80 lines of Prettier's 120-character
    // lines, blank lines and comments not counted (a nested function counts in its parent too).
    files: ['trainer/**/*.ts', 'extension/**/*.ts', 'webview/**/*.ts', 'examples/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
      // `#trainer/…` (tsconfig.json's paths) is the tests' way into the trainer; the shipped code
      // imports by relative path, which every bundler and the user's Node resolve without it.
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^#trainer/', message: 'Import by relative path: #trainer/ is for the tests.' }] },
      ],
    },
  },
  {
    // The shipped code reads untrusted text (model output, HTTP requests): a regular expression
    // that backtracks super-linearly there lets a small input hold the CPU for minutes. The rules
    // miss some shapes (a lazy `[\s\S]*?` inside a repeated group, as the verl splitter had), so
    // the readers are also timed on adversarial input: test/unit/parsers/linearTime.test.ts.
    files: ['trainer/**/*.ts', 'extension/**/*.ts', 'webview/**/*.ts'],
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': 'error',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
