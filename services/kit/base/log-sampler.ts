/**
 * At most one log line per kind every `everyMs`, carrying how many were not logged
 * since: for refusals an outsider can trigger at will (bad credentials, refused token
 * exchanges), which must stay visible without letting anyone fill the logs.
 */
export class LogSampler {
  private readonly last = new Map<string, { at: number; skipped: number }>();

  constructor(private readonly everyMs = 10_000) {}

  /**
   * Whether to log this occurrence of `kind`; when yes, `log(notLogged)` is called with
   * the number of occurrences skipped since the last line.
   */
  sample(kind: string, log: (notLogged: number) => void, now = Date.now()): void {
    const s = this.last.get(kind) ?? { at: -Infinity, skipped: 0 };
    if (now - s.at >= this.everyMs) {
      log(s.skipped);
      this.last.set(kind, { at: now, skipped: 0 });
    } else {
      s.skipped++;
      this.last.set(kind, s);
    }
  }
}
