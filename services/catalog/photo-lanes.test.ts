import { PhotoLanes, SLOW_FETCH_MS } from './photo-lanes';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

/** Lanes on a clock the test moves. */
function lanes(concurrency = 4, perWorkspace = 2) {
  let t = 1_000_000;
  const l = new PhotoLanes({ concurrency, perWorkspace }, () => t);
  return { l, advance: (ms: number) => void (t += ms) };
}

describe('PhotoLanes', () => {
  test('counts photos in flight per workspace and in all; free workers follow', () => {
    const { l } = lanes();
    const a1 = l.started(A);
    l.started(A);
    l.started(B);
    expect(l.inFlight).toBe(3);
    expect(l.inFlightOf(A)).toBe(2);
    expect(l.allowance()).toMatchObject({
      free: 1,
      busy: [
        [A, 2],
        [B, 1],
      ],
    });
    l.ended(A, a1, true);
    expect(l.inFlightOf(A)).toBe(1);
    expect(l.allowance().free).toBe(2);
  });

  test('ending an unknown photo changes nothing', () => {
    const { l } = lanes();
    l.started(A);
    l.ended(B, 1, true);
    l.ended(A, 42, true);
    expect(l.inFlight).toBe(1);
  });

  test('a workspace is slow while one of its fetches has run longer than SLOW_FETCH_MS', () => {
    const { l, advance } = lanes();
    l.started(A);
    advance(SLOW_FETCH_MS);
    expect(l.isSlow(A)).toBe(false);
    advance(1);
    expect(l.isSlow(A)).toBe(true);
    expect(l.allowance()).toMatchObject({ slow: [A], freeSlow: 1 });
  });

  test('a workspace is slow while its moving average is over SLOW_FETCH_MS, and recovers as fast fetches come in', () => {
    const { l, advance } = lanes();
    const s = l.started(A);
    advance(30_000); // a time-out: counted at its whole length
    l.ended(A, s, true);
    expect(l.isSlow(A)).toBe(true);
    let fastOnes = 0;
    while (l.isSlow(A)) {
      const t = l.started(A);
      advance(100);
      l.ended(A, t, true);
      fastOnes++;
    }
    // 30 s · 0.7^n + ... falls under 5 s after six fast fetches.
    expect(fastOnes).toBe(6);
  });

  test('an ended photo without a sample (given up, aborted) leaves the average alone', () => {
    const { l, advance } = lanes();
    const s = l.started(A);
    advance(60_000);
    l.ended(A, s, false);
    expect(l.isSlow(A)).toBe(false);
  });

  test('slow workspaces share one slow lane of perWorkspace slots; healthy ones keep the rest', () => {
    const { l, advance } = lanes(4, 2);
    l.started(A);
    l.started(C);
    advance(SLOW_FETCH_MS + 1);
    l.started(B);
    const a = l.allowance();
    expect(a.slow.sort()).toEqual([A, C].sort());
    // A and C hold the whole slow lane between them; B's next photo may take the last worker.
    expect(a).toMatchObject({ free: 1, freeSlow: 0 });
  });

  test('free never goes below zero', () => {
    const { l } = lanes(1, 1);
    l.started(A);
    l.started(B);
    expect(l.allowance()).toMatchObject({ free: 0 });
  });
});
