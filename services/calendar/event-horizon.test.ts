/**
 * SharedHorizon (event-horizon.ts): the streams of a process share horizon reads, and
 * a caller never gets a read that began before its call.
 */
import type { Sql } from '../kit/db';
import { SharedHorizon } from './event-horizon';

const sql = {} as Sql;

/** A fake read: each call is recorded and resolved (or failed) by the test. */
function fakeReads() {
  const calls: { resolve: (v: string) => void; reject: (e: unknown) => void }[] = [];
  const read = () => new Promise<string>((resolve, reject) => void calls.push({ resolve, reject }));
  return { calls, read };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

test('one read when idle; callers during a read share ONE read that starts after it', async () => {
  const { calls, read } = fakeReads();
  const h = new SharedHorizon(read);
  const first = h.get(sql);
  expect(calls).toHaveLength(1);
  // Asked while the first read runs: it may have begun before their commits, so they wait for the next.
  const second = h.get(sql);
  const third = h.get(sql);
  expect(calls).toHaveLength(1);
  calls[0]!.resolve('10');
  await expect(first).resolves.toBe('10');
  await tick();
  expect(calls).toHaveLength(2);
  calls[1]!.resolve('12');
  await expect(second).resolves.toBe('12');
  await expect(third).resolves.toBe('12');
  // Idle again: a new read at once.
  const fourth = h.get(sql);
  expect(calls).toHaveLength(3);
  calls[2]!.resolve('15');
  await expect(fourth).resolves.toBe('15');
});

test('a failed read fails its callers only; the queued read still runs', async () => {
  const { calls, read } = fakeReads();
  const h = new SharedHorizon(read);
  const first = h.get(sql);
  const second = h.get(sql);
  calls[0]!.reject(new Error('connection lost'));
  await expect(first).rejects.toThrow('connection lost');
  await tick();
  calls[1]!.resolve('20');
  await expect(second).resolves.toBe('20');
});
