/**
 * Jest's global set-up: brings the shipped build (dist/psync.cjs, deploy/build-main.mjs)
 * up to date before any test runs, so the system tests start what the image runs, made
 * from the sources as they are now (a no-op when no source changed); and makes the
 * initialised PGlite directory the embedded databases of the tests are copied from
 * (test/support/pglite-template.ts; a no-op once made).
 */
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

module.exports = function buildMain() {
  execFileSync(process.execPath, [join(__dirname, '..', '..', 'deploy', 'build-main.mjs')], { stdio: 'inherit' });
  execFileSync(process.execPath, ['--import', 'tsx', join(__dirname, 'make-pglite-template.ts')], { stdio: 'inherit' });
};
