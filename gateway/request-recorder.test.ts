import { createLogger } from '../services/kit/base';
import { currentRequestId, withRequestId } from '../services/kit/base';
import { RequestRecorder, type RequestRecordInit } from './request-recorder';
import { waitFor } from '../test/support/eventually';
import { logEvents } from '../test/support/log-events';

const lines: Record<string, unknown>[] = [];
const log = createLogger({ level: 'warn', name: 'recorder-test' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });

const rec = (n: number): RequestRecordInit => ({ requestId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, status: 200 });
const idsOf = (batches: RequestRecordInit[][]) => batches.flat().map((r) => Number(r.requestId!.slice(-12)));

/** A send whose calls wait until released. */
function gatedSend() {
  const batches: RequestRecordInit[][] = [];
  const waiting: (() => void)[] = [];
  return {
    batches,
    send: (batch: RequestRecordInit[]) => {
      batches.push(batch);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    releaseAll: () => waiting.splice(0).forEach((r) => r()),
  };
}

beforeEach(() => (lines.length = 0));

test('a full batch is sent at once; a partial one after flushMs', async () => {
  const sent: RequestRecordInit[][] = [];
  const r = new RequestRecorder({ send: async (b) => void sent.push(b), log, batchSize: 3, flushMs: 50 });
  for (let i = 0; i < 4; i++) r.record(rec(i));
  await new Promise((res) => setImmediate(res));
  expect(sent.map((b) => b.length)).toEqual([3]);
  await waitFor('the partial batch, after flushMs', () => sent.length === 2, 5000, 5);
  expect(sent.map((b) => b.length)).toEqual([3, 1]);
  expect(idsOf(sent)).toEqual([0, 1, 2, 3]);
});

test('record() never waits: with identity hanging, it returns at once and one batch at a time is in flight', async () => {
  const gate = gatedSend();
  const r = new RequestRecorder({ send: gate.send, log, batchSize: 2, flushMs: 10, maxQueue: 100 });
  const started = performance.now();
  for (let i = 0; i < 50; i++) r.record(rec(i));
  expect(performance.now() - started).toBeLessThan(50);
  await new Promise((res) => setTimeout(res, 50));
  expect(gate.batches).toHaveLength(1);
  expect(r.queued).toBe(48);
  // Released: the rest follows, batch after batch, in order.
  const drained = (async () => {
    while (r.queued > 0 || gate.batches.flat().length < 50) {
      gate.releaseAll();
      await new Promise((res) => setTimeout(res, 1));
    }
    gate.releaseAll();
  })();
  await drained;
  await r.flush();
  expect(idsOf(gate.batches)).toEqual([...Array(50).keys()]);
  expect(r.dropped).toEqual({ queue_full: 0, send_failed: 0, refused: 0 });
});

test('the queue is bounded: beyond maxQueue records are dropped and counted, with one sampled warning', async () => {
  const gate = gatedSend();
  const r = new RequestRecorder({ send: gate.send, log, batchSize: 5, flushMs: 10, maxQueue: 10 });
  for (let i = 0; i < 100; i++) r.record(rec(i));
  // 5 went into the batch in flight, 10 wait, the rest were dropped.
  expect(gate.batches.flat()).toHaveLength(5);
  expect(r.queued).toBe(10);
  expect(r.dropped.queue_full).toBe(85);
  expect(logEvents(lines, 'request_log.queue_full')).toHaveLength(1);
  gate.releaseAll();
});

test('a batch that fails is dropped and counted, never retried; later batches still go', async () => {
  let calls = 0;
  const sent: RequestRecordInit[][] = [];
  const r = new RequestRecorder({
    send: async (b) => {
      calls++;
      if (calls === 1) throw new Error('identity is down');
      sent.push(b);
    },
    log,
    batchSize: 2,
    flushMs: 5,
  });
  r.record(rec(1));
  r.record(rec(2));
  await r.flush();
  r.record(rec(3));
  await r.flush();
  expect(r.dropped).toEqual({ queue_full: 0, send_failed: 2, refused: 0 });
  expect(idsOf(sent)).toEqual([3]);
  expect(logEvents(lines, 'request_log.batch.failed')).toHaveLength(1);
});

test('records identity refuses are dropped and counted alone (reason refused); the rest of the batch is not counted', async () => {
  const r = new RequestRecorder({ send: async (b) => ({ recorded: b.length - 1, refused: 1 }), log, batchSize: 3, flushMs: 5 });
  for (let i = 0; i < 3; i++) r.record(rec(i));
  await r.flush();
  expect(r.dropped).toEqual({ queue_full: 0, send_failed: 0, refused: 1 });
  expect(logEvents(lines, 'request_log.batch.refused')).toHaveLength(1);
});

test('close() sends what is queued, and gives up after its grace period when identity hangs', async () => {
  const sent: RequestRecordInit[][] = [];
  const r = new RequestRecorder({ send: async (b) => void sent.push(b), log, batchSize: 100, flushMs: 60_000 });
  r.record(rec(1));
  r.record(rec(2));
  await r.close(1000);
  expect(idsOf(sent)).toEqual([1, 2]);

  const hanging = new RequestRecorder({ send: () => new Promise(() => undefined), log, batchSize: 100, flushMs: 60_000 });
  hanging.record(rec(1));
  const started = Date.now();
  await hanging.close(100);
  expect(Date.now() - started).toBeLessThan(1000);
});

test("batches are sent outside the recording request's context (no partner request id on RecordRequests)", async () => {
  const seen: (string | undefined)[] = [];
  const r = new RequestRecorder({ send: async () => void seen.push(currentRequestId()), log, batchSize: 2, flushMs: 5 });
  withRequestId('request-a', () => r.record(rec(1)));
  await new Promise((res) => setTimeout(res, 30));
  withRequestId('request-b', () => {
    r.record(rec(2));
    r.record(rec(3));
  });
  await r.flush();
  expect(seen).toEqual([undefined, undefined]);
});
