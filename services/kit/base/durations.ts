/**
 * Durations as the settings write them (`7d`, `36h`, `90s`): the units, and a number of
 * milliseconds written back in the largest unit that divides it (config-parsers.ts
 * parses them; nats-stream.ts names a stream's retention in its log lines).
 */

/** Units of a duration setting, in milliseconds. */
export const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `ms` in the largest unit that divides it (7d, 36h, 90s …), as the duration settings are written. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
