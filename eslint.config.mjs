// Lint rules that formatting cannot meet: function size, parameter count, floating promises,
// unused code. Prettier owns the layout (npm run format).
import tseslint from 'typescript-eslint';
import describeSize from './scripts/eslint/describe-size.mjs';

const functionSize = { max: 60, skipBlankLines: false, skipComments: false, IIFEs: true };

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'examples/', 'scripts/', 'bin/', 'eslint.config.mjs'] },
  {
    files: ['src/**/*.ts', 'testing/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      'max-lines-per-function': ['error', functionSize],
      'max-params': ['error', 5],
      // Prettier's width, for what it does not wrap: comments. A message or path in a literal stays whole.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // node:test's describe() and test() return promises that the runner itself awaits: not
    // floating. Any other promise in a test is still one.
    files: ['test/**/*.ts'],
    plugins: { local: { rules: { 'describe-size': describeSize } } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite'] },
          ],
        },
      ],
      // A describe() callback is a container: its length is the number of its tests, each of which
      // (and every other function) is held to 60 lines. Counting the container would ask either to
      // split suites that share one sandbox per store, or to disable the rule for whole files.
      'max-lines-per-function': 'off',
      'local/describe-size': ['error', functionSize],
    },
  },
);
