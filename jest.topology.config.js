/**
 * Jest for the production-topology fault tests (test/topology/): a three-node NATS
 * cluster losing a node, a PostgreSQL primary failing over to its standby, the previous
 * release beside this one on one schema, a backup restored. Each test starts its own
 * servers on free loopback ports and never touches the machine's PostgreSQL or NATS.
 * They run one at a time (each loads both cores) through `npm run test:topology`
 * (test/topology/run.ts), not in `npm test`.
 */
const base = require('./jest.config.js');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/topology'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 600000,
  maxWorkers: 1,
};
