/**
 * The order keys of the outbox relay (outbox-relay.ts): which rows belong to one
 * aggregate, whose events must reach the bus in commit order. A key lists the
 * aggregate outermost first (e.g. [workspace, listing]); rows whose keys are equal, or
 * one a prefix of the other, are of one aggregate, and `[]` is the whole schema.
 */

/** Without a key from the encoder: the row's workspace (`workspace_id` header), else the whole schema. */
export function defaultOrderKey(headers: Record<string, string>): readonly string[] {
  return headers.workspace_id ? [headers.workspace_id] : [];
}

/**
 * The order keys of the rows in flight. Two keys conflict when one is a prefix of the
 * other (equal included): [] conflicts with everything, [w] with every [w, …], [w, a]
 * with [w] and [w, a] but not [w, b]. Counted per key and per proper prefix, so a check
 * costs one look-up per segment.
 */
export class OrderKeys {
  private readonly exact = new Map<string, number>();
  private readonly prefixes = new Map<string, number>();

  conflicts(key: readonly string[]): boolean {
    if (this.prefixes.has(join(key))) return true; // something in flight lies below this key
    for (let i = 0; i <= key.length; i++) if (this.exact.has(join(key.slice(0, i)))) return true;
    return false;
  }

  add(key: readonly string[]): void {
    bump(this.exact, join(key), 1);
    for (let i = 0; i < key.length; i++) bump(this.prefixes, join(key.slice(0, i)), 1);
  }

  remove(key: readonly string[]): void {
    bump(this.exact, join(key), -1);
    for (let i = 0; i < key.length; i++) bump(this.prefixes, join(key.slice(0, i)), -1);
  }
}

const join = (key: readonly string[]) => key.join('\u0000');

function bump(m: Map<string, number>, k: string, by: number): void {
  const n = (m.get(k) ?? 0) + by;
  if (n === 0) m.delete(k);
  else m.set(k, n);
}
