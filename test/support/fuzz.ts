/**
 * Seeded generators of hostile input for the fuzz tests (test/gateway/fuzz.test.ts,
 * test/platform/internal-fuzz.test.ts).
 *
 * The seed is FUZZ_SEED when set (CI sets a fixed one: .ci/run), otherwise random; the
 * test prints it, so any failure reruns exactly with `FUZZ_SEED=<seed> npx jest …`.
 */
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import { ScalarType } from '@bufbuild/protobuf';

/** The seed of this run and whether it was chosen here. */
export function fuzzSeed(): { seed: number; chosen: boolean } {
  const given = process.env.FUZZ_SEED;
  if (given && /^\d+$/.test(given)) return { seed: Number(given) >>> 0, chosen: false };
  return { seed: (Math.random() * 2 ** 32) >>> 0, chosen: true };
}

/** mulberry32: a small, fast, seedable PRNG; the same seed gives the same run. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A marker put into submitted values: a refusal that contains it echoed the input. */
export function canary(n: number): string {
  return `zqcanary${n}x`;
}

/** Hostile strings; `mark` is woven into some so echoes are detectable. */
export function hostileString(rng: Rng, mark: string): string {
  const pool = [
    '\u0000',
    `a\u0000${mark}`,
    `${mark}\ud800`,
    '\udc00',
    `\ud83d${mark}`,
    '',
    ' ',
    `${mark}`.repeat(1 + rng.int(3)),
    'x'.repeat(100_000),
    '𝒜'.repeat(3000),
    `<script>${mark}</script>`,
    `'; drop table identity.api_keys; --${mark}`,
    '%00',
    '../../../etc/passwd',
    '\u202e\u200b\ufeff',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59-23:59',
    '0001-01-01T00:30:00+01:00',
    '2024-02-30',
    '1e309',
    '-0',
    '__proto__',
    `${mark}\r\nX-Injected: yes`,
  ];
  return rng.pick(pool);
}

/** Hostile JSON values of every type. */
export function hostileValue(rng: Rng, mark: string): unknown {
  switch (rng.int(9)) {
    case 0:
    case 1:
    case 2:
      return hostileString(rng, mark);
    case 3:
      return rng.pick([1e308, -1e308, 0, -0, 1.5, 2 ** 53 + 1, -1, 5e-324, 4294967296, -2147483649]);
    case 4:
      return rng.pick([null, true, false]);
    case 5:
      return [];
    case 6:
      return {};
    case 7:
      return [hostileString(rng, mark), rng.int(100)];
    default:
      // Keys carry no marker: an unknown field's name is reported back as its `field`.
      return { [rng.pick(['k', '__proto__', 'constructor', '\u0000', '$ref', 'a.b[0]'])]: hostileString(rng, mark) };
  }
}

/** Every path (dotted, with indices) of the leaves and containers of `value`. */
function pathsOf(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...prefix, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  return out;
}

/** `body` with one to three places replaced by hostile values, and maybe an unknown field. */
export function mutate(rng: Rng, body: Record<string, unknown>, mark: string): unknown {
  const copy = structuredClone<Record<string, unknown>>(body);
  const rounds = 1 + rng.int(3);
  for (let r = 0; r < rounds; r++) {
    const paths = pathsOf(copy).filter((p) => p.length > 0);
    if (paths.length === 0) break;
    const path = rng.pick(paths);
    let target: any = copy;
    for (const key of path.slice(0, -1)) target = target?.[key];
    if (target && typeof target === 'object') {
      if (rng.chance(0.15)) delete target[path[path.length - 1]!];
      else target[path[path.length - 1]!] = hostileValue(rng, mark);
    }
  }
  if (rng.chance(0.15)) copy[`unknown_${rng.int(1000)}`] = hostileValue(rng, mark);
  return copy;
}

/** Raw body texts JSON.stringify cannot make: prototype keys, deep nesting, huge numbers, broken bytes, truncation. */
export function rawBody(rng: Rng, valid: string, mark: string): string | Buffer {
  switch (rng.int(9)) {
    case 0:
      return `{"__proto__":{"polluted":"${mark}"},${valid.slice(1)}`;
    case 1:
      return `{"constructor":{"prototype":{"polluted":"${mark}"}},${valid.slice(1)}`;
    case 2:
      return '['.repeat(5000) + ']'.repeat(5000);
    case 3:
      return `{"a":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`;
    case 4:
      return valid.replace(/:\s*(-?\d+(\.\d+)?)/, `:1${'0'.repeat(400)}`);
    case 5:
      return Buffer.concat([Buffer.from(valid.slice(0, 10)), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from(valid.slice(10))]);
    case 6:
      return valid.slice(0, rng.int(valid.length));
    case 7:
      return `${valid}${valid}`;
    default:
      return `{"name":"${mark}\\u0000","a":"\\ud800"}`;
  }
}

/**
 * A random init object for a protobuf message: hostile strings, extreme numbers, unknown
 * enum values, out-of-range timestamps, nested messages, lists and maps.
 */
export function randomMessage(rng: Rng, desc: DescMessage, mark: string, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (desc.typeName === 'google.protobuf.Timestamp') {
    return { seconds: rng.pick([-62135596801n, -62135596800n, 0n, 253402300799n, 253402300800n, 9223372036854775807n]), nanos: rng.pick([0, -1, 999999999, 1000000000]) };
  }
  const oneofsDone = new Set<string>();
  for (const field of desc.fields) {
    if (!rng.chance(0.7)) continue;
    if (field.oneof) {
      if (oneofsDone.has(field.oneof.localName)) continue;
      oneofsDone.add(field.oneof.localName);
      out[field.oneof.localName] = { case: field.localName, value: singleValue(rng, field, mark, depth) };
      continue;
    }
    if (field.fieldKind === 'list') {
      out[field.localName] = Array.from({ length: rng.int(4) }, () => listItem(rng, field, mark, depth));
    } else if (field.fieldKind === 'map') {
      const map: Record<string, unknown> = {};
      for (let i = rng.int(3); i > 0; i--)
        map[field.mapKey === ScalarType.STRING ? hostileString(rng, mark).slice(0, 50) : String(rng.int(1000))] = mapValue(rng, field, mark, depth);
      out[field.localName] = map;
    } else {
      out[field.localName] = singleValue(rng, field, mark, depth);
    }
  }
  return out;
}

function scalar(rng: Rng, type: ScalarType, mark: string): unknown {
  switch (type) {
    case ScalarType.STRING:
      return hostileString(rng, mark).slice(0, 5000);
    case ScalarType.BYTES:
      return new Uint8Array(Array.from({ length: rng.int(64) }, () => rng.int(256)));
    case ScalarType.BOOL:
      return rng.chance(0.5);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return rng.pick([0, -1, 1.5, 1e308, -1e308, Number.NaN, Number.POSITIVE_INFINITY]);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return rng.pick([0n, -1n, 9223372036854775807n, -9223372036854775808n]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return rng.pick([0n, 1n, 18446744073709551615n]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return rng.pick([0, 1, 4294967295]);
    default:
      return rng.pick([0, -1, 1, 2147483647, -2147483648, 100000]);
  }
}

function singleValue(rng: Rng, field: DescField, mark: string, depth: number): unknown {
  switch (field.fieldKind) {
    case 'scalar':
      return scalar(rng, field.scalar, mark);
    case 'enum':
      return rng.chance(0.7) ? rng.pick(field.enum.values).number : rng.pick([-1, 999]);
    case 'message':
      return depth > 3 ? {} : randomMessage(rng, field.message, mark, depth + 1);
    default:
      return undefined;
  }
}

function listItem(rng: Rng, field: DescField & { fieldKind: 'list' }, mark: string, depth: number): unknown {
  if (field.listKind === 'scalar') return scalar(rng, field.scalar, mark);
  if (field.listKind === 'enum') return rng.pick(field.enum.values).number;
  return depth > 3 ? {} : randomMessage(rng, field.message, mark, depth + 1);
}

function mapValue(rng: Rng, field: DescField & { fieldKind: 'map' }, mark: string, depth: number): unknown {
  if (field.mapKind === 'scalar') return scalar(rng, field.scalar, mark);
  if (field.mapKind === 'enum') return rng.pick(field.enum.values).number;
  return depth > 3 ? {} : randomMessage(rng, field.message, mark, depth + 1);
}
