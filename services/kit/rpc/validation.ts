/**
 * Shape rules of internal requests: declared once, in the `.proto` files, as Buf
 * protovalidate annotations (`(buf.validate.field)` …), and enforced here, by a server
 * interceptor, before any handler runs. Handlers therefore receive only requests whose
 * fields have the declared lengths, patterns, ranges and enum values; what needs the
 * database (ownership, conflicts, existence) stays in the services.
 *
 * A refused request is INVALID_ARGUMENT with ErrorDetail VALIDATION_FAILED and a
 * ValidationDetail of `{field, code}` (errors.proto), as every other validation
 * failure in the system:
 *
 * - `field`: the proto path, `property.address.country`, `property.photos[1].url`,
 *   each field once, with the first rule it broke;
 *   a map entry is reported on the map field (a key is a submitted value); a oneof
 *   by its own name.
 * - `code`: the public vocabulary (docs/contract-gaps.md "`errors[].code` values"), from the
 *   rule that failed: `required`, `format` (uuid, uri, …), `pattern`, `enum`,
 *   `min_length`/`max_length`, `minimum`/`maximum`, `min_items`/`max_items`,
 *   `type` (a non-finite number); a required oneof with no member set is `required`. A custom CEL rule names its code as the
 *   last segment of its id (`base_rate.pattern` → `pattern`); anything else is
 *   `invalid`.
 *
 * The message lists each field with protovalidate's own text for the rule (which
 * names the rule, never the submitted value); the psync CLI shows it.
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { createRegistry, getOption, hasOption, isMessage, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';
import { reflect, type Path, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { createValidator, type Violation as RuleViolation } from '@bufbuild/protovalidate';
import { FieldRulesSchema, field as fieldRules, message as messageRules, oneof as oneofRules } from '../../../gen/buf/validate/validate_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { file_psync_common_v1_rules } from '../../../gen/psync/common/v1/rules_pb';
import type { Violation } from './errors';
import { checkedStream } from './checked-stream';

/** At most this many violations are reported for one request (as the gateway does). */
const MAX_VIOLATIONS = 100;

/**
 * The patterns of the .proto files, compiled once each as JavaScript regular
 * expressions. protovalidate's default engine is an RE2 written in JavaScript, which
 * doubled the cost of a PlaceHold request (bench/validation.ts); every pattern the
 * protos use is a plain RE2 one (no backreference, no lookaround, no nested
 * quantifier) that means the same to both engines and cannot backtrack badly.
 */
const compiledPatterns = new Map<string, RegExp>();

function matches(pattern: string, value: string): boolean {
  let re = compiledPatterns.get(pattern);
  if (!re) {
    re = new RegExp(pattern, 'u');
    compiledPatterns.set(pattern, re);
  }
  return re.test(value);
}

/** psync's predefined rules (rules.proto) must be known to the validator, which compiles each type's rules once. */
const validator = createValidator({ registry: createRegistry(file_psync_common_v1_rules), regexMatch: matches });

/** Public code of a standard rule, by the rule's own name (the last segment of its id). */
const RULE_CODES: Record<string, string> = {
  required: 'required',
  min_len: 'min_length',
  min_bytes: 'min_length',
  max_len: 'max_length',
  max_bytes: 'max_length',
  pattern: 'pattern',
  prefix: 'pattern',
  suffix: 'pattern',
  contains: 'pattern',
  not_contains: 'pattern',
  in: 'enum',
  not_in: 'enum',
  const: 'enum',
  defined_only: 'enum',
  gt: 'minimum',
  gte: 'minimum',
  lt: 'maximum',
  lte: 'maximum',
  finite: 'type',
  min_items: 'min_items',
  min_pairs: 'min_items',
  max_items: 'max_items',
  max_pairs: 'max_items',
};

/** Rules checking a well-known string format (string.uuid, string.uri, …). */
const FORMAT_RULES = new Set([
  'email',
  'hostname',
  'ip',
  'ipv4',
  'ipv6',
  'uri',
  'uri_ref',
  'address',
  'uuid',
  'tuuid',
  'ulid',
  'ip_with_prefixlen',
  'ipv4_with_prefixlen',
  'ipv6_with_prefixlen',
  'ip_prefix',
  'ipv4_prefix',
  'ipv6_prefix',
  'host_and_port',
  'well_known_regex',
  'protobuf_fqn',
  'protobuf_dot_fqn',
]);

/** The public codes (docs/contract-gaps.md): a custom rule whose id ends in one of them reports it. */
const PUBLIC_CODES = new Set(['required', 'type', 'format', 'pattern', 'enum', 'min_length', 'max_length', 'minimum', 'maximum', 'min_items', 'max_items', 'one_of', 'invalid']);

/** The proto path as text: `a.b[2].c`; a map entry is its map field. */
export function fieldPathText(path: Path): string {
  let out = '';
  for (const item of path) {
    if (item.kind === 'list_sub') out += `[${item.index}]`;
    else if (item.kind === 'map_sub') continue;
    else out += out === '' ? item.name : `.${item.name}`;
  }
  return out;
}

/** The value at `path` in `msg` (a number for the scalar fields range rules apply to), or undefined. */
function valueAt(msg: ReflectMessage, path: Path): unknown {
  let cur: unknown = msg;
  for (const item of path) {
    if (cur === undefined || cur === null) return undefined;
    const c = cur as { get(x: unknown): unknown; field?: unknown };
    if (item.kind === 'list_sub') cur = c.get(item.index);
    else if (item.kind === 'map_sub') cur = c.get(item.key);
    else if (item.kind === 'field') cur = (cur as ReflectMessage).get(item);
    else return undefined;
  }
  return cur;
}

/** The bound a range rule names: the value at `rule` (a path into the field's FieldRules). */
function ruleBound(path: Path, rule: Path): unknown {
  const last = [...path].reverse().find((p): p is DescField => p.kind === 'field');
  if (!last || !hasOption(last, fieldRules)) return undefined;
  return valueAt(reflect(FieldRulesSchema, getOption(last, fieldRules)), rule);
}

const asNumber = (v: unknown): number | undefined =>
  typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : isMessage(v) && 'seconds' in v ? Number((v as { seconds: bigint }).seconds) : undefined;

/**
 * `minimum` or `maximum` for a two-sided range rule (`int32.gte_lte` …): protovalidate
 * reports the range as one rule, pointing at its lower bound; which side the value
 * is on decides. NaN and ±Infinity are `type` (as a JSON number can be neither).
 */
function rangeCode(msg: ReflectMessage, v: RuleViolation): string {
  const value = asNumber(valueAt(msg, v.field));
  const lower = asNumber(ruleBound(v.field, v.rule));
  if (value === undefined || lower === undefined) return 'invalid';
  if (!Number.isFinite(value)) return 'type';
  return value <= lower ? 'minimum' : 'maximum';
}

/** The public code of one protovalidate violation. */
export function violationCode(msg: ReflectMessage, v: RuleViolation): string {
  const last = v.field[v.field.length - 1];
  // A required oneof with no member set (protobuf cannot hold two).
  if (last?.kind === 'oneof') return 'required';
  const name = v.ruleId.slice(v.ruleId.lastIndexOf('.') + 1);
  // A custom rule: a CEL expression on the field or the message, or a predefined rule (an extension, rules.proto).
  const custom = v.rule.length === 0 || v.rule.some((r) => r.kind === 'extension' || (r.kind === 'field' && r.name === 'cel'));
  if (custom) return PUBLIC_CODES.has(name) ? name : 'invalid';
  if (name.endsWith('_empty')) return 'required';
  if (FORMAT_RULES.has(name)) return 'format';
  if (/^(gt|gte)_(lt|lte)(_exclusive)?$/.test(name)) return rangeCode(msg, v);
  return RULE_CODES[name] ?? 'invalid';
}

/**
 * The violations of `message` (of type `desc`) in field order, each field once with
 * the first rule it broke (`fr` as a country is `pattern`, not also `enum`); `[]`
 * when it is valid.
 */
export function ruleViolations(desc: DescMessage, message: Message): { violations: Violation[]; texts: string[] } {
  const result = validator.validate(desc, message);
  if (result.kind === 'valid') return { violations: [], texts: [] };
  // A rule that cannot be evaluated is a fault in a .proto file: the error interceptor answers INTERNAL and logs it.
  if (result.kind === 'error') throw result.error;
  const msg = reflect(desc, message);
  const violations: Violation[] = [];
  const texts: string[] = [];
  const seen = new Set<string>();
  for (const v of result.violations) {
    const field = fieldPathText(v.field);
    if (seen.has(field)) continue;
    seen.add(field);
    violations.push({ field, code: violationCode(msg, v) });
    texts.push(`${field || 'request'}: ${v.message}`);
    if (violations.length >= MAX_VIOLATIONS) break;
  }
  return { violations, texts };
}

/** INVALID_ARGUMENT / VALIDATION_FAILED for the rule violations of a request, or undefined when it has none. */
export function ruleRefusal(desc: DescMessage, message: Message): ConnectError | undefined {
  const { violations, texts } = ruleViolations(desc, message);
  if (violations.length === 0) return undefined;
  return new ConnectError(`invalid request: ${texts.join('; ')}`, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/** Whether a message of `desc` (or one it holds) carries any rule; computed once per type. */
const annotated = new Map<DescMessage, boolean>();

export function hasRules(desc: DescMessage): boolean {
  const known = annotated.get(desc);
  if (known !== undefined) return known;
  // A recursive type meeting itself counts as annotated (validating is the safe side).
  annotated.set(desc, true);
  const own =
    hasOption(desc, messageRules) ||
    desc.oneofs.some((o) => hasOption(o, oneofRules)) ||
    desc.fields.some((f) => hasOption(f, fieldRules) || (nestedMessage(f) !== undefined && hasRules(nestedMessage(f)!)));
  annotated.set(desc, own);
  return own;
}

/** The message type a field holds (singular, list or map value), if any. */
function nestedMessage(f: DescField): DescMessage | undefined {
  if (f.fieldKind === 'message') return f.message;
  if (f.fieldKind === 'list' && f.listKind === 'message') return f.message;
  if (f.fieldKind === 'map' && f.mapKind === 'message') return f.message;
  return undefined;
}

/**
 * The interceptor (services/kit/runtime/run-process.ts registers it after authentication and
 * the request guard). A request type without any rule costs one map look-up; a
 * streamed request's messages are checked as the handler reads them.
 */
export const validationInterceptor: Interceptor = (next) => (req) => {
  const desc = req.method.input;
  if (!hasRules(desc)) return next(req);
  if (req.stream) return next({ ...req, message: checkedStream(req.message, (msg: Message) => ruleRefusal(desc, msg)) });
  const err = ruleRefusal(desc, req.message);
  return err ? Promise.reject(err) : next(req);
};
