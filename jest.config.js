/**
 * Jest: TypeScript through @swc/jest (type checking is `tsc --noEmit`, run by `npm test`).
 * Unit tests sit next to the code (*.test.ts); integration tests live in test/; a workspace
 * package keeps its tests in packages/<name>/test/.
 * They talk to real PostgreSQL/NATS when DATABASE_URL/NATS_URL are set, to the
 * embedded default otherwise (see test/support/).
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/services', '<rootDir>/gateway', '<rootDir>/test', '<rootDir>/bin', '<rootDir>/packages', '<rootDir>/bench', '<rootDir>/tools'],
  testMatch: ['**/*.test.ts'],
  // The production-topology fault tests run alone: `npm run test:topology` (jest.topology.config.js).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/topology/'],
  // Tests use the partner SDK's source, not its build (dist/, made by its `npm run build` or `npm pack`).
  moduleNameMapper: { '^@partner-sync/partner-sdk$': '<rootDir>/packages/partner-sdk/src/index.ts' },
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  // The system tests start the shipped build (test/support/system.ts): made current once per run.
  globalSetup: '<rootDir>/test/support/build-main.js',
  testTimeout: 60000,
  // The default report, and the skipped tests named by file (test/support/skipped-reporter.js).
  reporters: ['default', '<rootDir>/test/support/skipped-reporter.js'],
  maxWorkers: 2,
};
