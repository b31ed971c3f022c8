/**
 * `npm run test:topology`: runs the production-topology fault tests (test/topology/, one
 * at a time), then prints each fault's figures as one table and fails when Jest failed or
 * any fault lost, duplicated or double-sold something or answered a server error other
 * than 503. Extra arguments go to Jest (e.g. a test file to run alone).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { clearFigures, non503Errors, recordedFigures } from './support/figures';

const root = join(__dirname, '..', '..');
clearFigures();
const jest = spawnSync(process.execPath, [join(root, 'node_modules', 'jest', 'bin', 'jest.js'), '--config', join(root, 'jest.topology.config.js'), ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});

const figures = recordedFigures();
const rows = figures.map((f) => ({
  fault: f.fault,
  lost: f.lost,
  duplicated: f.duplicated,
  'double-sold': f.doubleSold,
  'non-503 5xx': non503Errors(f.statuses),
  '503': f.statuses['503'] ?? 0,
  answered: Object.values(f.statuses).reduce((a, b) => a + b, 0),
  'recovery s': f.recoverySeconds,
}));
console.log('\ntopology figures');
console.table(rows);
for (const f of figures) {
  console.log(`${f.fault}: ${f.load}`);
  if (f.extra)
    console.log(
      `  ${Object.entries(f.extra)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    );
}
const broken = figures.filter((f) => f.lost > 0 || f.duplicated > 0 || f.doubleSold > 0 || non503Errors(f.statuses) > 0);
for (const f of broken) console.error(`topology: ${f.fault} broke a promise (see the table)`);
process.exit(jest.status !== 0 || broken.length > 0 ? 1 : 0);
