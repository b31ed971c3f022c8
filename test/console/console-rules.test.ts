/**
 * The console's pure rules, in Node: the month grid's dates (console/src/month.ts) and
 * when the page renews its token (console/src/renewal.ts) against the SDK's own
 * renewal point (packages/partner-sdk/src/token-source.ts).
 */
import { addMonths, datesOf, monthOf, parseMonth, weeksOf } from '../../console/src/month';
import { renewInMs } from '../../console/src/renewal';

describe('month grid', () => {
  test('a month starts on its weekday under Monday and ends padded to a whole week', () => {
    // 2032-03-01 is a Monday; 2030-07-01 a Monday too; 2026-11-01 a Sunday.
    expect(weeksOf('2032-03')[0]![0]).toBe('2032-03-01');
    const nov = weeksOf('2026-11');
    expect(nov[0]).toEqual([null, null, null, null, null, null, '2026-11-01']);
    expect(nov.every((w) => w.length === 7)).toBe(true);
    expect(nov.flat().filter((d) => d !== null)).toEqual(datesOf('2026-11'));
  });

  test('month lengths, leap years and year ends', () => {
    expect(datesOf('2032-02')).toHaveLength(29);
    expect(datesOf('2030-02')).toHaveLength(28);
    expect(datesOf('2030-07').at(-1)).toBe('2030-07-31');
    expect(addMonths('2030-12', 1)).toBe('2031-01');
    expect(addMonths('2030-01', -1)).toBe('2029-12');
    expect(monthOf(new Date('2030-07-31T23:59:59Z'))).toBe('2030-07');
  });

  test('only YYYY-MM is a month', () => {
    expect(['2030-07', '2030-13', '2030-7', 'july', null, ''].map(parseMonth)).toEqual(['2030-07', undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('token renewal', () => {
  /** The SDK's renewal point for a token of `lifetimeMs`, counted from its exchange. */
  const sdkRefreshAt = (lifetimeMs: number) => lifetimeMs - Math.min(60_000, lifetimeMs / 5);

  test('a minute before expiry for a 15-minute token, a fifth of what is left for a short one', () => {
    expect(renewInMs(900_000)).toBe(840_000);
    expect(renewInMs(40_000)).toBe(32_000);
  });

  test('never before the SDK would exchange, never after expiry, at least a second away', () => {
    for (const lifetime of [5_000, 40_000, 300_000, 900_000, 3_600_000]) {
      for (const elapsed of [0, 100, 1_000, lifetime / 2]) {
        const at = elapsed + renewInMs(lifetime - elapsed);
        expect(at).toBeGreaterThanOrEqual(sdkRefreshAt(lifetime));
        if (lifetime - elapsed > 1_000) expect(at).toBeLessThan(lifetime);
      }
    }
    expect(renewInMs(-5_000)).toBe(1_000);
  });
});
