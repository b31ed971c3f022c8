/**
 * Two-way tables between a protobuf enum and the lower-case names the rest of the
 * system writes (public JSON, database columns, webhook kinds, the CLI), derived from
 * the enum's descriptor so a value added to a .proto is named without another edit:
 * PROPERTY_STATUS_LISTED → `listed`, BLOCK_REASON_OWNER_STAY → `owner_stay`.
 *
 * The zero value (`…_UNSPECIFIED`) has no name: it means "not set", so turning it (or
 * a number the descriptor does not know) into a name is a fault and throws, rather
 * than inventing a value; a caller with a default for it says so (`nameOr`).
 */
import type { DescEnum } from '@bufbuild/protobuf';
import { EnvironmentSchema, type Environment } from '../../../gen/psync/common/v1/environment_pb';

export interface EnumNamesOptions {
  /**
   * How a value's own name (without the enum's prefix, e.g. `BOOKING_CONFIRMED`)
   * is spelt; default lower case (`booking_confirmed`).
   */
  spell?: (localName: string) => string;
}

/** Lower case with its first underscore a dot: `BOOKING_CONFIRMED` → `booking.confirmed` (webhook event kinds). */
export const dottedKind = (localName: string): string => localName.toLowerCase().replace('_', '.');

/**
 * The public names of a protobuf enum at the type level, from its generated JSON type
 * (protoc-gen-es `json_types=true`, buf.gen.yaml): `EnumName<BlockReasonJson, 'BLOCK_REASON_'>`
 * is `'reserved' | 'maintenance' | 'owner_stay' | 'other'`, so a value added to the .proto
 * is a name here without another edit. The zero value has none.
 */
export type EnumName<J extends string, Prefix extends string> = J extends `${Prefix}UNSPECIFIED` ? never : J extends `${Prefix}${infer Local}` ? Lowercase<Local> : never;

/** As EnumName, spelt as `dottedKind` spells it: `'booking.confirmed' | …`. */
export type DottedEnumName<J extends string, Prefix extends string> =
  EnumName<J, Prefix> extends infer N ? (N extends `${infer Head}_${infer Tail}` ? `${Head}.${Tail}` : N) : never;

export class EnumNames<E extends number, N extends string = string> {
  private readonly byValue = new Map<number, N>();

  private readonly byName = new Map<string, E>();

  constructor(
    private readonly desc: DescEnum,
    opts: EnumNamesOptions = {},
  ) {
    const spell = opts.spell ?? ((n: string) => n.toLowerCase());
    for (const v of desc.values) {
      if (v.number === 0) continue;
      const name = spell(v.localName) as N;
      this.byValue.set(v.number, name);
      this.byName.set(name, v.number as E);
    }
  }

  /** Every name, in the enum's declaration order. */
  get names(): N[] {
    return [...this.byValue.values()];
  }

  /** The name of `value`; throws for the zero value or a number the enum does not declare. */
  name(value: E): N {
    const n = this.byValue.get(value);
    if (n === undefined) throw new Error(`${this.desc.typeName}: no name for value ${value}`);
    return n;
  }

  /** The name of `value`, or undefined when it has none (the zero value or an unknown number). */
  nameOf(value: E): N | undefined {
    return this.byValue.get(value);
  }

  /** The name of `value`, or `fallback` when it has none. */
  nameOr<F extends string>(value: E, fallback: F): N | F {
    return this.byValue.get(value) ?? fallback;
  }

  /** The value named `name`; throws for a name the enum does not have. */
  value(name: string): E {
    const v = this.byName.get(name);
    if (v === undefined) throw new Error(`${this.desc.typeName}: no value has that name`);
    return v;
  }

  /** The value named `name`, or undefined. */
  find(name: string): E | undefined {
    return this.byName.get(name);
  }
}

/** The environment of a workspace: `sandbox` / `production` (every service and the CLI). */
export const environments = new EnumNames<Environment, 'sandbox' | 'production'>(EnvironmentSchema);
