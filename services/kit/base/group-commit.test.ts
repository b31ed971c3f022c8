/** GroupCommit: batching while a write runs, the batch bound, per-item results and failures. */
import { GroupCommit } from './group-commit';

/** A writer whose writes finish only when the test releases them. */
function gatedWriter(fail: (batch: number[]) => boolean = () => false) {
  const writes: number[][] = [];
  const gates: Array<() => void> = [];
  const write = async (batch: number[]) => {
    writes.push(batch);
    await new Promise<void>((r) => gates.push(r));
    if (fail(batch)) throw new Error(`failed ${batch.join(',')}`);
    return batch.map((n) => n * 10);
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!();
  };
  return { writes, write, release };
}

test('an idle writer writes at once; what arrives meanwhile goes into the next write, at most maxBatch', async () => {
  const w = gatedWriter();
  const g = new GroupCommit<number, number>({ maxBatch: 2, write: w.write });
  const results = [1, 2, 3, 4].map((n) => g.submit(n));
  await w.release();
  await w.release();
  await w.release();
  expect(await Promise.all(results)).toEqual([10, 20, 30, 40]);
  expect(w.writes).toEqual([[1], [2, 3], [4]]);
});

test('a failed batch fails every item, or with isolateFailures only the item at fault', async () => {
  for (const isolateFailures of [false, true]) {
    const w = gatedWriter((batch) => batch.includes(3));
    const g = new GroupCommit<number, number>({ maxBatch: 8, write: w.write, isolateFailures });
    const first = g.submit(1);
    const rest = [2, 3, 4].map((n) => g.submit(n).catch((e: Error) => e.message));
    for (let i = 0; i < (isolateFailures ? 5 : 2); i++) await w.release();
    expect(await first).toBe(10);
    expect(await Promise.all(rest)).toEqual(isolateFailures ? [20, 'failed 3', 40] : ['failed 2,3,4', 'failed 2,3,4', 'failed 2,3,4']);
    expect(w.writes).toEqual(isolateFailures ? [[1], [2, 3, 4], [2], [3], [4]] : [[1], [2, 3, 4]]);
  }
});
