/**
 * The decode budget (photo-decode-budget.ts): the weights held never add up to more
 * than the capacity, waiters are served in arrival order, a weight is given back
 * whatever happens to the work holding it, an impossible weight is refused at once,
 * and an aborted wait leaves the queue.
 */
import { DecodeBudget, DecodeWaitAborted } from './photo-decode-budget';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('DecodeBudget', () => {
  test('never exceeds its capacity, whatever the mix of weights and how many ask at once', async () => {
    const budget = new DecodeBudget(100);
    let held = 0;
    let maxHeld = 0;
    // A deterministic pseudo-random mix: many small decodes, some large, a few of the full capacity.
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const weights = Array.from({ length: 300 }, () => {
      const r = rnd();
      return r < 0.6 ? 1 + Math.floor(rnd() * 20) : r < 0.95 ? 20 + Math.floor(rnd() * 60) : 100;
    });
    await Promise.all(
      weights.map((w) =>
        budget.run(w, async () => {
          held += w;
          maxHeld = Math.max(maxHeld, held);
          expect(budget.inUse).toBeLessThanOrEqual(100);
          for (let k = Math.floor(rnd() * 3); k >= 0; k--) await tick();
          held -= w;
        }),
      ),
    );
    expect(maxHeld).toBeLessThanOrEqual(100);
    expect(budget.highWater).toBeLessThanOrEqual(100);
    expect(maxHeld).toBeGreaterThan(50); // it did run decodes side by side
    expect(budget.inUse).toBe(0);
    expect(budget.waiting).toBe(0);
  });

  test('first come, first served: a large waiter at the head is not overtaken by smaller ones that would fit', async () => {
    const budget = new DecodeBudget(100);
    const order: string[] = [];
    const first = await budget.acquire(60);
    const big = budget.acquire(80).then((release) => (order.push('big'), release));
    const small = budget.acquire(10).then((release) => (order.push('small'), release));
    await tick();
    expect(order).toEqual([]); // 60 + 10 would fit, but the 80 asked first
    expect(budget.waiting).toBe(2);
    first();
    const releaseBig = await big;
    const releaseSmall = await small; // 80 + 10 fit together: granted in the same drain
    expect(order).toEqual(['big', 'small']);
    expect(budget.inUse).toBe(90);
    releaseBig();
    releaseSmall();
    expect(budget.inUse).toBe(0);
  });

  test('grants in arrival order as room frees up', async () => {
    const budget = new DecodeBudget(10);
    const order: number[] = [];
    const holders = Array.from({ length: 6 }, (_, i) => budget.acquire(10).then((release) => (order.push(i), release)));
    for (let i = 0; i < 6; i++) {
      const release = await holders[i]!;
      await tick();
      expect(order).toEqual(Array.from({ length: i + 1 }, (_, k) => k)); // only the head holds it
      release();
    }
  });

  test('gives the weight back when the work fails, and the next waiter proceeds', async () => {
    const budget = new DecodeBudget(50);
    const failing = budget.run(50, async () => {
      await tick();
      throw new Error('corrupt pixels');
    });
    const next = budget.run(50, async () => budget.inUse);
    await expect(failing).rejects.toThrow('corrupt pixels');
    await expect(next).resolves.toBe(50);
    expect(budget.inUse).toBe(0);
  });

  test('a release called twice gives back once', async () => {
    const budget = new DecodeBudget(10);
    const a = await budget.acquire(4);
    const b = await budget.acquire(4);
    a();
    a();
    expect(budget.inUse).toBe(4);
    b();
    expect(budget.inUse).toBe(0);
  });

  test('a weight over the capacity is refused at once instead of waiting for ever; others are not held up', async () => {
    const budget = new DecodeBudget(100);
    await expect(budget.acquire(101)).rejects.toThrow(RangeError);
    await expect(budget.acquire(0)).rejects.toThrow(RangeError);
    expect(budget.waiting).toBe(0);
    const release = await budget.acquire(100); // the whole budget is a valid weight ("decode alone")
    release();
  });

  test('an aborted wait leaves the queue and unblocks the waiters behind it', async () => {
    const budget = new DecodeBudget(100);
    const holder = await budget.acquire(50);
    const abort = new AbortController();
    const blocked = budget.acquire(100, abort.signal);
    const behind = budget.acquire(40);
    await tick();
    expect(budget.waiting).toBe(2);
    abort.abort();
    await expect(blocked).rejects.toBeInstanceOf(DecodeWaitAborted);
    const releaseBehind = await behind; // 50 + 40 fit once the 100 at the head is gone
    expect(budget.inUse).toBe(90);
    expect(budget.waiting).toBe(0);
    releaseBehind();
    holder();
    await expect(budget.acquire(1, abort.signal)).rejects.toBeInstanceOf(DecodeWaitAborted); // already aborted
    expect(budget.inUse).toBe(0);
  });
});
