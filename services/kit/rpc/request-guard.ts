/**
 * The request guard: a server interceptor refusing, before any handler runs, every
 * internal request carrying a value no service can store (storable-values.ts):
 *
 * - a string holding U+0000 or an unpaired surrogate, in any string field at any depth
 *   (singular, repeated, map keys and values, oneof members, nested messages): code
 *   `invalid`;
 * - a google.protobuf.Timestamp before 0001-01-01T00:00:00Z (`minimum`), after
 *   9999-12-31T23:59:59.999499999Z (`maximum`: the services read instants as
 *   JavaScript Dates, rounded to the millisecond, and a later one rounds into year
 *   10000, which no column stores), or with nanos outside 0…999 999 999 (`invalid`).
 *
 * The answer is INVALID_ARGUMENT with ErrorDetail VALIDATION_FAILED and a
 * ValidationDetail listing each offending field by its proto path (`property.name`,
 * `photos[1].url`; a map field by its own name, never a key), never the value.
 *
 * A repeated field whose items the .proto leaves to the handler
 * (`(buf.validate.field).repeated.items.ignore = IGNORE_ALWAYS`, as RecordRequests'
 * records) is not walked either: the handler checks each item with
 * `requestViolations` and refuses only the bad ones, so one bad item does not refuse
 * its batch. One declaration tells both interceptors.
 *
 * It runs on every internal call, the in-process ones included, so it is built to
 * cost next to nothing when nothing is wrong: each request type's descriptor is
 * compiled once into a plan holding only the fields that can lead to a string or a
 * Timestamp, and the walk allocates nothing until it finds a bad value (field paths
 * are built only then, in a second pass).
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { getOption, hasOption, ScalarType, type DescField, type DescMessage, type DescOneof } from '@bufbuild/protobuf';
import { field as fieldRules, Ignore } from '../../../gen/buf/validate/validate_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { isUnstorableText, MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS } from '../base';
import { checkedStream } from './checked-stream';

/** One refused field: `{field, code}` as in the public `errors[]` (docs/contract-gaps.md "`errors[].code` values"). */
export interface GuardViolation {
  field: string;
  code: 'invalid' | 'minimum' | 'maximum';
}

/** At most this many violations are reported for one request (as the gateway does). */
const MAX_VIOLATIONS = 100;

const TIMESTAMP = 'google.protobuf.Timestamp';
/** Nanos from which the last second of year 9999, rounded to a millisecond, is year 10000. */
const LAST_MILLISECOND_ROUNDS_UP_AT = 999_500_000;

/** A field worth visiting, by how its value is held. */
type Check =
  | { kind: 'text'; field: DescField }
  | { kind: 'message'; field: DescField; plan: Plan }
  | { kind: 'text-list'; field: DescField }
  | { kind: 'message-list'; field: DescField; plan: Plan }
  | { kind: 'map'; field: DescField; textKeys: boolean; textValues: boolean; plan: Plan | undefined }
  | { kind: 'oneof'; oneof: DescOneof; cases: Map<string, Check> };

/** What to visit in one message type. */
interface Plan {
  readonly timestamp: boolean;
  readonly checks: Check[];
}

const plans = new Map<DescMessage, Plan>();
/** Plans being compiled (a recursive type meets its own plan before it is complete). */
const building = new Set<Plan>();

/** True when visiting a message of `plan` can find nothing (a plan still being built counts as non-empty). */
const isEmpty = (plan: Plan) => !plan.timestamp && plan.checks.length === 0 && !building.has(plan);

/** The plan of `desc`, compiled on first use; recursive message types refer to their own plan. */
export function planOf(desc: DescMessage): Plan {
  const known = plans.get(desc);
  if (known) return known;
  const plan: Plan = { timestamp: desc.typeName === TIMESTAMP, checks: [] };
  plans.set(desc, plan);
  if (plan.timestamp) return plan;
  building.add(plan);
  for (const member of desc.members) {
    if (member.kind === 'oneof') {
      const cases = new Map<string, Check>();
      for (const f of member.fields) {
        const c = checkOf(f);
        if (c) cases.set(f.localName, c);
      }
      if (cases.size > 0) plan.checks.push({ kind: 'oneof', oneof: member, cases });
    } else {
      const c = checkOf(member);
      if (c) plan.checks.push(c);
    }
  }
  building.delete(plan);
  return plan;
}

/** True when the .proto leaves the items of this repeated field to the handler (the validation interceptor skips them too). */
function itemsLeftToHandler(field: DescField): boolean {
  if (!hasOption(field, fieldRules)) return false;
  const rules = getOption(field, fieldRules);
  return rules.type.case === 'repeated' && rules.type.value.items?.ignore === Ignore.ALWAYS;
}

function checkOf(field: DescField): Check | undefined {
  switch (field.fieldKind) {
    case 'scalar':
      return field.scalar === ScalarType.STRING ? { kind: 'text', field } : undefined;
    case 'message': {
      // A google.protobuf.StringValue field is held unboxed, as a string: visitValue looks at the value's type.
      const plan = planOf(field.message);
      return isEmpty(plan) ? undefined : { kind: 'message', field, plan };
    }
    case 'list':
      if (itemsLeftToHandler(field)) return undefined;
      if (field.listKind === 'scalar') return field.scalar === ScalarType.STRING ? { kind: 'text-list', field } : undefined;
      if (field.listKind === 'message') {
        const plan = planOf(field.message);
        return isEmpty(plan) ? undefined : { kind: 'message-list', field, plan };
      }
      return undefined;
    case 'map': {
      const textKeys = field.mapKey === ScalarType.STRING;
      const textValues = field.mapKind === 'scalar' && field.scalar === ScalarType.STRING;
      const plan = field.mapKind === 'message' ? planOf(field.message) : undefined;
      const messages = plan !== undefined && !isEmpty(plan);
      return textKeys || textValues || messages ? { kind: 'map', field, textKeys, textValues, plan: messages ? plan : undefined } : undefined;
    }
    default:
      return undefined;
  }
}

type Fields = Record<string, unknown>;

/** Where violations go; `undefined` for the first, allocation-free pass that only answers "anything wrong?". */
type Sink = GuardViolation[] | undefined;

const join = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);

/** Records a violation; true when the walk should stop (first pass, or the cap reached). */
function report(out: Sink, field: string, code: GuardViolation['code']): boolean {
  if (!out) return true;
  out.push({ field, code });
  return out.length >= MAX_VIOLATIONS;
}

/** Visits one message; returns true to stop the walk. `path` is only meaningful with a sink. */
function visitMessage(plan: Plan, msg: Fields, path: string, out: Sink): boolean {
  if (plan.timestamp) {
    const seconds = msg.seconds as bigint;
    const nanos = msg.nanos as number;
    if (seconds < MIN_TIMESTAMP_SECONDS) return report(out, path, 'minimum');
    if (seconds > MAX_TIMESTAMP_SECONDS) return report(out, path, 'maximum');
    if (nanos < 0 || nanos > 999_999_999) return report(out, path, 'invalid');
    if (seconds === MAX_TIMESTAMP_SECONDS && nanos >= LAST_MILLISECOND_ROUNDS_UP_AT) return report(out, path, 'maximum');
    return false;
  }
  for (const check of plan.checks) {
    if (check.kind === 'oneof') {
      const selected = msg[check.oneof.localName] as { case: string | undefined; value: unknown };
      if (selected.case === undefined) continue;
      const c = check.cases.get(selected.case);
      if (c && visitValue(c, selected.value, path, out)) return true;
    } else if (visitValue(check, msg[check.field.localName], path, out)) {
      return true;
    }
  }
  return false;
}

/** Visits the value of one field (`check` is never a oneof here). */
function visitValue(check: Check, value: unknown, path: string, out: Sink): boolean {
  if (value === undefined || value === null || check.kind === 'oneof') return false;
  const field = check.field;
  switch (check.kind) {
    case 'text':
      return isUnstorableText(value as string) && report(out, out ? join(path, field.name) : '', 'invalid');
    case 'message':
      if (typeof value === 'string') return isUnstorableText(value) && report(out, out ? join(path, field.name) : '', 'invalid');
      return visitMessage(check.plan, value as Fields, out ? join(path, field.name) : '', out);
    case 'text-list': {
      const list = value as string[];
      for (let i = 0; i < list.length; i++) {
        if (isUnstorableText(list[i]!) && report(out, out ? `${join(path, field.name)}[${i}]` : '', 'invalid')) return true;
      }
      return false;
    }
    case 'message-list': {
      const list = value as Fields[];
      for (let i = 0; i < list.length; i++) {
        if (visitMessage(check.plan, list[i]!, out ? `${join(path, field.name)}[${i}]` : '', out)) return true;
      }
      return false;
    }
    case 'map': {
      const map = value as Record<string, unknown>;
      for (const key in map) {
        // A bad key or value is reported on the map field itself: a key is a submitted value.
        if (check.textKeys && isUnstorableText(key) && report(out, out ? join(path, field.name) : '', 'invalid')) return true;
        const v = map[key];
        if (check.textValues && isUnstorableText(v as string) && report(out, out ? join(path, field.name) : '', 'invalid')) return true;
        if (check.plan && visitMessage(check.plan, v as Fields, out ? join(path, field.name) : '', out)) return true;
      }
      return false;
    }
  }
}

/** Every violation in `msg` (a message of type `desc`), in field order; `[]` when it is fine. */
export function requestViolations(desc: DescMessage, msg: object): GuardViolation[] {
  const plan = planOf(desc);
  if (isEmpty(plan) || !visitMessage(plan, msg as Fields, '', undefined)) return [];
  const out: GuardViolation[] = [];
  visitMessage(plan, msg as Fields, '', out);
  // The same field can be reported twice (a map holding several bad entries).
  const seen = new Set<string>();
  return out.filter((v) => {
    const key = `${v.field} ${v.code}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * INVALID_ARGUMENT with ErrorDetail VALIDATION_FAILED and a ValidationDetail of
 * `violations` (the message names fields and codes, never a value).
 */
export function invalidRequest(violations: GuardViolation[]): ConnectError {
  const fields = violations.map((v) => `${v.field}: ${v.code}`).join(', ');
  return new ConnectError(`invalid request (${fields})`, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/** The refusal of `msg`, or undefined when every value in it can be stored. */
function refusal(desc: DescMessage, msg: object): ConnectError | undefined {
  const violations = requestViolations(desc, msg);
  return violations.length === 0 ? undefined : invalidRequest(violations);
}

/**
 * The interceptor (services/kit/runtime/run-process.ts registers it after authentication, so
 * an unauthenticated caller learns nothing about its payload). A streamed request's
 * messages are checked as the handler reads them.
 */
export const requestGuardInterceptor: Interceptor = (next) => (req) => {
  const desc = req.method.input;
  if (isEmpty(planOf(desc))) return next(req);
  if (req.stream) return next({ ...req, message: checkedStream(req.message, (msg: object) => refusal(desc, msg)) });
  const err = refusal(desc, req.message);
  return err ? Promise.reject(err) : next(req);
};
