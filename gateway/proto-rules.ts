/**
 * JSON Schema keywords read from a .proto field's protovalidate rules, so a limit the
 * services enforce (a length, a range, an item count, a pattern, an allowed list) is
 * written once, in the .proto, and the public request schemas in gateway/routes/ state
 * it by reading it here rather than by repeating the number.
 *
 * Only what the two sides share is read: where the public rule is deliberately
 * stricter than the internal one (a page number from 1, the money pattern), the route's
 * schema says so itself. A rule this module is asked for and the field does not have
 * throws while the module loads, so a rule removed from a .proto cannot silently drop
 * out of the public contract.
 */
import { getOption, hasOption, toJson, type DescMessage } from '@bufbuild/protobuf';
import { field as fieldRules, FieldRulesSchema } from '../gen/buf/validate/validate_pb';
import type { EnumNames } from '../services/kit/base';

interface StringRulesJson {
  minLen?: string;
  maxLen?: string;
  pattern?: string;
  in?: string[];
}
interface NumberRulesJson {
  gte?: number;
  lte?: number;
}
interface RulesJson {
  required?: boolean;
  string?: StringRulesJson;
  int32?: NumberRulesJson;
  double?: NumberRulesJson;
  enum?: { in?: number[] };
  repeated?: { maxItems?: string; items?: RulesJson };
}

function rulesOf(desc: DescMessage, name: string): RulesJson {
  const field = desc.fields.find((f) => f.name === name);
  if (!field) throw new Error(`${desc.typeName} has no field ${name}`);
  if (!hasOption(field, fieldRules)) throw new Error(`${desc.typeName}.${name} has no protovalidate rules`);
  return toJson(FieldRulesSchema, getOption(field, fieldRules)) as RulesJson;
}

function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`protovalidate rule missing: ${what}`);
  return value;
}

/**
 * `maxLength` (and `minLength`: the rule's `min_len`, or 1 where the field is
 * `required`, which protovalidate reads as "not empty") of a string field, or of a
 * repeated string field's items.
 */
export function lengthOf(desc: DescMessage, name: string, of: 'field' | 'items' = 'field'): { minLength?: number; maxLength: number } {
  const field = rulesOf(desc, name);
  const rules = of === 'items' ? present(field.repeated?.items, `${desc.typeName}.${name} items`) : field;
  const s = present(rules.string, `${desc.typeName}.${name} string`);
  const maxLength = Number(present(s.maxLen, `${desc.typeName}.${name} max_len`));
  const min = s.minLen !== undefined ? Number(s.minLen) : rules.required ? 1 : undefined;
  return min === undefined ? { maxLength } : { minLength: min, maxLength };
}

/** The `pattern` of a string field (or of a repeated string field's items). */
export function patternOf(desc: DescMessage, name: string, of: 'field' | 'items' = 'field'): string {
  const rules = rulesOf(desc, name);
  const s = of === 'items' ? rules.repeated?.items?.string : rules.string;
  return present(s?.pattern, `${desc.typeName}.${name} pattern`);
}

/** The allowed strings (`in`) of a string field. */
export function allowedStringsOf(desc: DescMessage, name: string): string[] {
  return present(rulesOf(desc, name).string?.in, `${desc.typeName}.${name} in`);
}

/** `minimum` and `maximum` of an int32 or double field (`gte`, `lte`). */
export function rangeOf(desc: DescMessage, name: string): { minimum: number; maximum: number } {
  const rules = rulesOf(desc, name);
  const n = present(rules.int32 ?? rules.double, `${desc.typeName}.${name} range`);
  return { minimum: present(n.gte, `${desc.typeName}.${name} gte`), maximum: present(n.lte, `${desc.typeName}.${name} lte`) };
}

/** `minimum` of an int32 field (`gte`). */
export function minimumOf(desc: DescMessage, name: string): number {
  return present(rulesOf(desc, name).int32?.gte, `${desc.typeName}.${name} gte`);
}

/** `maxItems` of a repeated field. */
export function maxItemsOf(desc: DescMessage, name: string): number {
  return Number(present(rulesOf(desc, name).repeated?.maxItems, `${desc.typeName}.${name} max_items`));
}

/**
 * The public names of the enum values a field's rule allows (`in` on the field, or on
 * a repeated field's items), in the enum's declaration order.
 */
export function allowedNamesOf<N extends string>(desc: DescMessage, name: string, names: EnumNames<number, N>, of: 'field' | 'items' = 'field'): N[] {
  const rules = rulesOf(desc, name);
  const allowed = present(of === 'items' ? rules.repeated?.items?.enum?.in : rules.enum?.in, `${desc.typeName}.${name} enum in`);
  return names.names.filter((n) => allowed.includes(names.value(n)));
}
