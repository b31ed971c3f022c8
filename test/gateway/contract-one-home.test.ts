/**
 * The public contract is written in one place (docs/decisions.md "The contract in
 * TypeBox"): this walks the route declarations (gateway/contract/), the .proto enum
 * descriptors the gateway names, and the gateway's tree, and fails where a shape or a
 * list is written a second time, or where a part of it comes back as a JSON file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ENDPOINT_CHECK_NAMES, ENDPOINT_CHECK_RUN_STATUSES, REQUEST_SCHEMAS, RESPONSE_SCHEMAS, TEST_EVENT_KINDS } from '../../gateway/contract';
import { buildOpenApiDocument } from '../../gateway/openapi';
import * as publicEnums from '../../gateway/public-enums';
import { EnumNames } from '../../services/kit/base';
import { ROOT } from '../support/process';

const GATEWAY = join(ROOT, 'gateway');

/** Every file under `dir`, as paths relative to the repository. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [relative(ROOT, path)];
  });
}

/** Every `enum` list of strings in `schema`, with where it stands. */
function enumLists(schema: unknown, at: string, out: [string, string[]][] = []): [string, string[]][] {
  if (Array.isArray(schema)) schema.forEach((s, i) => enumLists(s, `${at}/${i}`, out));
  else if (schema !== null && typeof schema === 'object') {
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'enum' && Array.isArray(v) && v.every((x) => typeof x === 'string')) out.push([at, v]);
      else enumLists(v, `${at}/${k}`, out);
    }
  }
  return out;
}

/** The name lists the descriptors give (every EnumNames table of public-enums.ts, and the lists derived from them). */
const DERIVED: string[][] = [
  ...(Object.values(publicEnums) as unknown[]).filter((v): v is EnumNames<number> => v instanceof EnumNames).map((t) => t.names),
  publicEnums.publicNightStates,
  TEST_EVENT_KINDS,
];

/** Lists the contract owns itself: strings the notifications service answers, not a proto enum. */
const OWN: string[][] = [[...ENDPOINT_CHECK_NAMES], [...ENDPOINT_CHECK_RUN_STATUSES]];

/** The country list and the violation codes: a .proto rule's list, and the gateway's own vocabulary (problems.ts). */
const EXEMPT_PATHS = [/\/address\/properties\/country\/then$/];

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

describe('the public contract is declared once', () => {
  test('no JSON file (neither a schema nor a part of the OpenAPI document) and no hand-written shape of a request or answer in the gateway', () => {
    const json = files(GATEWAY).filter((f) => f.endsWith('.json'));
    expect(json).toEqual([]);
    const interfaces = files(GATEWAY)
      .filter((f) => /^gateway\/(contract|presenters|routes)\/.*\.ts$|^gateway\/validate\.ts$/.test(f))
      .flatMap((f) =>
        [...readFileSync(join(ROOT, f), 'utf8').matchAll(/^export (?:interface|type) (\w+(?:Json|Body|Query))\b(?! = (?:Static|Validated)<)/gm)].map((m) => `${f}: ${m[1]}`),
      );
    expect(interfaces).toEqual([]);
  });

  test('every enumeration of a request or answer schema is a list the descriptors give, or one the contract owns', () => {
    const lists = Object.entries({ ...REQUEST_SCHEMAS, ...RESPONSE_SCHEMAS }).flatMap(([name, schema]) => enumLists(schema, name));
    expect(lists.length).toBeGreaterThan(10);
    const unexplained = lists.filter(([at, list]) => !EXEMPT_PATHS.some((p) => p.test(at)) && ![...DERIVED, ...OWN].some((known) => sameList(known, list)));
    expect(unexplained).toEqual([]);
  });

  test('the OpenAPI document holds the very schema objects ajv compiles, not copies', () => {
    const doc = buildOpenApiDocument() as any;
    expect(doc.components.schemas.Block).toBe(REQUEST_SCHEMAS.block);
    expect(doc.components.schemas.BlockPut).toBe(RESPONSE_SCHEMAS.BlockPut);
    expect(doc.components.parameters.from.schema).toBe(REQUEST_SCHEMAS.blocksQuery.properties.from);
    const named = Object.values(doc.components.schemas);
    expect(Object.entries(RESPONSE_SCHEMAS).filter(([, schema]) => !named.includes(schema))).toEqual([]);
  });
});
