/**
 * Jest's global set-up: brings the shipped build (dist/psync.cjs, deploy/build-main.mjs)
 * up to date before any test runs, so the system tests start what the image runs, made
 * from the sources as they are now. A no-op when no source changed.
 */
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

module.exports = function buildMain() {
  execFileSync(process.execPath, [join(__dirname, '..', '..', 'deploy', 'build-main.mjs')], { stdio: 'inherit' });
};
