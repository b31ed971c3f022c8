// ESLint (flat config) with typescript-eslint's type-aware rules: `npm run lint:ts`.
// The type-aware set finds what tsc does not: promises nobody awaits or catches (an
// unhandled rejection ends the process), promises handed to callbacks that ignore them,
// awaiting what is not a promise. Rules whose reports were mostly noise for this code
// base are turned off below, each with the reason.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * A module with an index.ts (services/domain, and each folder of services/kit: base,
 * telemetry, work, db, events, egress, rpc, runtime) is used through that index alone:
 * its other files are its own business (docs/architecture.md "Modules").
 */
const PAST_AN_INDEX = {
  regex: '(^|/)(domain|base|telemetry|work|db|events|egress|rpc|runtime)/[^/]+$',
  message: 'Import the module through its index (`kit/db`, `domain` …), not a file inside it (docs/architecture.md "Modules").',
};

export default defineConfig(
  {
    // Generated code (gen/: `buf generate`; packages/*/src/generated/: the SDK's generator) and build output.
    ignores: ['gen/**', 'dist/**', 'node_modules/**', '.tmp/**', '.data/**', 'packages/*/dist/**', 'packages/*/src/generated/**', 'console/dist/**', 'test-results/**'],
  },
  {
    files: ['**/*.ts', 'console/**/*.tsx', 'console/**/*.mts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The point of the type-aware set: every promise is awaited, returned, caught or
      // explicitly `void`ed (only where it cannot reject or its rejection is handled).
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      // Handing a caught (unknown) error on to reject() is how errors travel; new rejections are Errors.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true, allowThrowingAny: true }],
      // `declare namespace` (types only) describes a package that ships no declarations.
      '@typescript-eslint/no-namespace': ['error', { allowDeclarations: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // String(x) of a caught error or of a decoded JSON value is deliberate.
      '@typescript-eslint/no-base-to-string': 'off',
      // Async interface methods (module start(), the bus, Connect handlers) have
      // implementations with nothing to await; `async` keeps their throws rejections.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Production code logs through the kit's logger (structured, redacted) and prints
    // CLI output to process.stdout/stderr itself; benchmarks and tests may use the console.
    files: ['services/**/*.ts', 'gateway/**/*.ts', 'bin/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    // The sandbox console runs in the browser and is built on the public API alone:
    // it may import the partner SDK's source and nothing of the services or the gateway.
    files: ['console/src/**/*.ts', 'console/src/**/*.tsx'],
    languageOptions: { globals: globals.browser },
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(services|gateway|gen|bin|test)/', message: 'The console uses the public API through packages/partner-sdk only.' }] },
      ],
    },
  },
  // The dependency rule (docs/architecture.md): the kit is at the bottom and knows no
  // service; a service never imports another; the gateway and the CLI reach services
  // only through generated clients. Code two of them need goes into the kit.
  ...['identity', 'catalog', 'calendar', 'notifications'].map((service) => ({
    files: [`services/${service}/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(gateway|bin)/|^\\.\\./(?!${service}/)(identity|catalog|calendar|notifications)/`,
              message: 'A service imports only the kit, the domain module, generated code and its own files (docs/architecture.md).',
            },
            PAST_AN_INDEX,
          ],
        },
      ],
    },
  })),
  {
    files: ['services/kit/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./){2}(identity|catalog|calendar|notifications|domain)(/|$)|^(\\.\\./)+(gateway|bin)/',
              message: 'The kit depends on no service and no domain rule (docs/architecture.md).',
            },
            PAST_AN_INDEX,
          ],
        },
      ],
    },
  },
  {
    files: ['gateway/**/*.ts', 'bin/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+services/(identity|catalog|calendar|notifications)/',
              message: 'The gateway and the CLI reach services through generated clients; shared code lives in services/kit (docs/architecture.md).',
            },
            PAST_AN_INDEX,
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'tools/**/*.ts', 'services/**/*.test.ts', 'gateway/**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [PAST_AN_INDEX] }] },
  },
  {
    // Tests and benchmarks read untyped JSON answers and send deliberately malformed
    // input: `any` is their normal case there (production code has none). Methods are
    // handed to expect() and map() unbound on purpose. Async callbacks handed where a
    // void one is expected (a fixture server's handler, an event listener) are their
    // normal case too, and a rejection there fails the run anyway: no-misused-promises
    // stays for production code, where it is a bug, and costs a fifth of the lint's
    // time on the test tree. no-floating-promises stays everywhere.
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts', 'packages/*/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
    },
  },
  {
    files: ['**/*.{js,cjs,mjs}'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module' },
  },
);
