/**
 * `npm run openapi:write`: writes docs/openapi.json from the declarations of gateway/contract/,
 * assembled by the very function the gateway serves at GET /v1/openapi.json
 * (gateway/openapi.ts), so the committed document and the served one cannot differ.
 * `--check` writes nothing and exits 1 when the committed file is not what the declarations
 * assemble to (the test test/gateway/openapi.test.ts checks the same).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPENAPI_FILE, openApiFileText } from './openapi';

const file = join(__dirname, '..', OPENAPI_FILE);
const text = openApiFileText();

if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    // missing: not up to date
  }
  if (committed !== text) {
    process.stderr.write(`${OPENAPI_FILE} is not what the code generates: run npm run openapi:write and commit it\n`);
    process.exit(1);
  }
  process.stdout.write(`${OPENAPI_FILE} is up to date\n`);
} else {
  writeFileSync(file, text);
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
