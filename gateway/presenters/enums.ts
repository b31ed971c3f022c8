/**
 * Enum translation between protobuf values and the public strings. A value the
 * public contract has no name for (UNSPECIFIED, or one added later to a proto) coming
 * back from a service is a fault on our side: it throws, and the error mapper answers
 * 500 with the cause in the log, rather than inventing a public value.
 */
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';

/** A two-way table between a protobuf enum and its public strings. */
export class PublicEnum<E extends number, N extends string> {
  private readonly byName: Map<string, E>;

  private readonly names: ReadonlyMap<E, N>;

  constructor(private readonly what: string, entries: readonly (readonly [E, N])[]) {
    this.names = new Map(entries);
    this.byName = new Map(entries.map(([value, name]) => [name, value]));
  }

  /** The public name of `value`; throws for a value without one. */
  name(value: E): N {
    const n = this.names.get(value);
    if (n === undefined) throw new Error(`${this.what}: no public name for protobuf value ${value}`);
    return n;
  }

  /** The protobuf value of a public name (validated by the schema before this is called). */
  value(name: N): E {
    const v = this.byName.get(name);
    if (v === undefined) throw new Error(`${this.what}: unknown public name`);
    return v;
  }
}

/** `result` of upserts: created / updated. */
export const upsertResults = new PublicEnum<UpsertResult, 'created' | 'updated'>('UpsertResult', [
  [UpsertResult.CREATED, 'created'],
  [UpsertResult.UPDATED, 'updated'],
]);
