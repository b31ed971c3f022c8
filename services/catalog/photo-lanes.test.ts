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
  test('counts photos in flight per workspace and in all; the fast lane’s free slots follow', () => {
    const { l } = lanes();
    const a1 = l.started(A, false);
    l.started(A, false);
    l.started(B, false);
    expect(l.inFlight).toBe(3);
    expect(l.inFlightOf(A)).toBe(2);
    expect(l.allowance()).toEqual({
      free: 5,
      freeFast: 1,
      freeSlow: 4,
      busy: [
        [A, 2],
        [B, 1],
      ],
      slow: [],
    });
    l.ended(a1, true);
    expect(l.inFlightOf(A)).toBe(1);
    expect(l.allowance().freeFast).toBe(2);
  });

  test('ending a photo twice changes nothing the second time', () => {
    const { l } = lanes();
    const a = l.started(A, false);
    l.started(A, false);
    l.ended(a, true);
    l.ended(a, true);
    expect(l.inFlight).toBe(1);
    expect(l.inFlightOf(A)).toBe(1);
  });

  test('a photo running longer than SLOW_FETCH_MS moves to the slow lane and frees its fast slot; its workspace is slow meanwhile', () => {
    const { l, advance } = lanes();
    l.started(A, false);
    advance(SLOW_FETCH_MS);
    expect(l.isSlow(A)).toBe(false);
    expect(l.allowance()).toMatchObject({ freeFast: 3, freeSlow: 4 });
    advance(1);
    expect(l.isSlow(A)).toBe(true);
    expect(l.allowance()).toMatchObject({ slow: [A], freeFast: 4, freeSlow: 3 });
  });

  test('a workspace is slow while its moving average is over SLOW_FETCH_MS, and recovers as fast photos come in', () => {
    const { l, advance } = lanes();
    const s = l.started(A, false);
    advance(30_000); // a time-out: counted at its whole length
    l.ended(s, true);
    expect(l.isSlow(A)).toBe(true);
    let fastOnes = 0;
    while (l.isSlow(A)) {
      const t = l.started(A, true);
      advance(100);
      l.ended(t, true);
      fastOnes++;
    }
    // 30 s · 0.7^n + … falls under 2 s after eight fast photos.
    expect(fastOnes).toBe(8);
  });

  test('an ended photo without a sample (given up, aborted) leaves the average alone', () => {
    const { l, advance } = lanes();
    const s = l.started(A, false);
    advance(60_000);
    l.ended(s, false);
    expect(l.isSlow(A)).toBe(false);
  });

  test('photos claimed for slow workspaces take slow slots from the start', () => {
    const { l } = lanes(2, 2);
    l.started(A, true);
    l.started(C, true);
    expect(l.allowance()).toMatchObject({ free: 2, freeFast: 2, freeSlow: 0 });
  });

  test('slow hosts hold fast slots for SLOW_FETCH_MS at most: then the fast lane is free for a healthy workspace', () => {
    const { l, advance } = lanes(4, 2);
    for (const ws of [A, A, C, C]) l.started(ws, false);
    expect(l.allowance()).toMatchObject({ freeFast: 0 });
    advance(SLOW_FETCH_MS + 1);
    const a = l.allowance();
    expect(a.slow.sort()).toEqual([A, C].sort());
    expect(a).toMatchObject({ free: 4, freeFast: 4, freeSlow: 0 });
  });

  test('everything in flight stays within both lanes together', () => {
    const { l, advance } = lanes(2, 2);
    l.started(A, false);
    l.started(C, false);
    advance(SLOW_FETCH_MS + 1); // both moved to the slow lane: the fast lane is free
    l.started(B, false);
    l.started(B, false);
    advance(SLOW_FETCH_MS + 1); // B's too: the slow lane holds 4 of its 2 slots
    expect(l.allowance()).toMatchObject({ free: 0, freeFast: 0, freeSlow: 0 });
  });
});
