/**
 * Generates src/generated/openapi.ts from docs/openapi.json with openapi-typescript.
 *
 *   npm run sdk:generate                    writes the file (from the repository root)
 *   npm run sdk:generate -- --check         exits 1 when the committed file is stale
 *   … --input FILE --output FILE            other document or output (tests use them)
 *
 * Run under tsx (openapi-typescript's dependencies are ES modules).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';

const PACKAGE_ROOT = join(__dirname, '..');
const REPOSITORY_ROOT = join(PACKAGE_ROOT, '..', '..');
export const OPENAPI_DOCUMENT = join(REPOSITORY_ROOT, 'docs', 'openapi.json');
export const GENERATED_TYPES = join(PACKAGE_ROOT, 'src', 'generated', 'openapi.ts');

/** The TypeScript source of the types of the OpenAPI document at `input`. */
export async function generateTypes(input = OPENAPI_DOCUMENT): Promise<string> {
  const document = JSON.parse(readFileSync(input, 'utf8')) as OpenAPI3;
  // defaultNonNullable off: a property with a `default` (a block's `reason`) stays as
  // optional as the document's `required` makes it. openapi-typescript's default would
  // make it required in every component schema, request bodies included.
  // enumValues: each enumeration also as a runtime list (`webhookEndpointEventsValues`),
  // so the SDK and the console read a list from the document instead of writing it again.
  const ast = await openapiTS(document, { defaultNonNullable: false, enumValues: true });
  return COMMENT_HEADER + astToString(ast);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { check: { type: 'boolean', default: false }, input: { type: 'string' }, output: { type: 'string' } },
  });
  const input = values.input ?? OPENAPI_DOCUMENT;
  const output = values.output ?? GENERATED_TYPES;
  const source = await generateTypes(input);
  const shown = relative(process.cwd(), output);
  if (values.check) {
    let committed = '';
    try {
      committed = readFileSync(output, 'utf8');
    } catch {
      // a missing file is stale
    }
    if (committed === source) {
      console.log(`${shown} is up to date with ${relative(process.cwd(), input)}`);
      return 0;
    }
    console.error(`${shown} differs from the types of ${relative(process.cwd(), input)}: run npm run sdk:generate`);
    return 1;
  }
  writeFileSync(output, source);
  console.log(`wrote ${shown}`);
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
