/**
 * Event bus semantics (bus.ts), run against whichever bus startTestBus gives:
 * real NATS JetStream when NATS_URL is set, the in-process bus otherwise.
 */
import { randomUUID } from 'node:crypto';
import type { ReceivedEvent, Subscription } from '../../services/kit/events';
import { createMemoryBus, subjectMatches } from '../../services/kit/events';
import { createLogger } from '../../services/kit/base';
import { startTestBus, TestBus } from '../support/bus';
import { holdsFor, sleep, waitFor } from '../support/eventually';

/** How long a redelivery that must not happen is watched for. */
const QUIET_MS = 300;

let t: TestBus;
const subs: Subscription[] = [];

beforeAll(async () => {
  t = await startTestBus();
});

afterAll(async () => {
  await Promise.all(subs.map((s) => s.stop()));
  await t?.stop();
});

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
/** Subscribes with a handler that records every delivery. */
async function collect(durable: string, subjects: string[], handler?: (e: ReceivedEvent) => Promise<void> | void) {
  const got: ReceivedEvent[] = [];
  const sub = await t.bus.subscribe({
    durable,
    subjects,
    handler: async (e) => {
      got.push(e);
      await handler?.(e);
    },
  });
  subs.push(sub);
  return { got, sub };
}

async function publish(subject: string, body: string, id: string = randomUUID(), headers?: Record<string, string>) {
  await t.bus.publish({ id, subject, data: enc(body), headers });
  return id;
}

test('the bus reports its kind and answers ping', async () => {
  expect(t.bus.kind).toBe(t.real ? 'nats' : 'memory');
  await expect(t.bus.ping()).resolves.toBeUndefined();
});

test('delivers events in publish order, with subject (no prefix), data, headers and id', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) ids.push(await publish('ord.item.created', `n${i}`, randomUUID(), { traceparent: `00-${i}` }));
  const { got } = await collect('ord-reader', ['ord.>']);
  await waitFor('50 events', () => got.length >= 50);
  expect(got.map((e) => e.id)).toEqual(ids);
  expect(got[0]!.subject).toBe('ord.item.created');
  expect(dec(got[7]!.data)).toBe('n7');
  expect(got[7]!.headers).toEqual({ traceparent: '00-7' });
  expect(got.every((e) => e.deliveryCount === 1)).toBe(true);
});

test('a second publish with the same id is dropped', async () => {
  const id = randomUUID();
  await publish('dup.x', 'first', id);
  await publish('dup.x', 'second', id);
  const sentinel = await publish('dup.x', 'sentinel');
  const { got } = await collect('dup-reader', ['dup.x']);
  // The stream is ordered: a delivered duplicate would have come before the sentinel.
  await waitFor('sentinel', () => got.some((e) => e.id === sentinel));
  expect(got.map((e) => dec(e.data))).toEqual(['first', 'sentinel']);
});

test('a throwing handler gets the event again with a higher deliveryCount', async () => {
  const failOnce = new Set<string>();
  const id = await publish('retry.x', 'flaky');
  const after = await publish('retry.x', 'fine');
  const { got } = await collect('retry-reader', ['retry.x'], (e) => {
    if (e.id === id && !failOnce.has(e.id)) {
      failOnce.add(e.id);
      throw new Error('handler failed on purpose');
    }
  });
  await waitFor('redelivery', () => got.filter((e) => e.id === id).length >= 2);
  const deliveries = got.filter((e) => e.id === id);
  expect(deliveries.map((e) => e.deliveryCount)).toEqual([1, 2]);
  expect(got.some((e) => e.id === after)).toBe(true);
  await holdsFor('acknowledged after the success: no third delivery', () => got.filter((e) => e.id === id).length === 2, QUIET_MS);
});

test('a durable consumer keeps its position across stop and subscribe', async () => {
  const first = [await publish('pos.x', 'a'), await publish('pos.x', 'b'), await publish('pos.x', 'c')];
  const one = await collect('pos-reader', ['pos.x']);
  await waitFor('first three', () => one.got.length >= 3);
  await one.sub.stop();
  const second = [await publish('pos.x', 'd'), await publish('pos.x', 'e'), await publish('pos.x', 'f')];
  const sentinel = await publish('pos.x', 'g');

  const two = await collect('pos-reader', ['pos.x']);
  // Ordered: anything the first reader had acknowledged, delivered again, would come before the sentinel.
  await waitFor('the sentinel', () => two.got.some((e) => e.id === sentinel));
  expect(two.got.map((e) => e.id)).toEqual([...second, sentinel]);
  expect(one.got.map((e) => e.id)).toEqual(first); // stopped: nothing more arrived

  // A different durable starts from the beginning.
  const other = await collect('pos-other', ['pos.x']);
  await waitFor('all seven', () => other.got.length >= 7);
  expect(other.got.map((e) => e.id)).toEqual([...first, ...second, sentinel]);
});

test('only subscribed subjects are delivered (one subject and several)', async () => {
  const ax = await publish('flt.a.x', 'ax');
  await publish('flt.a.y', 'ay');
  const bz = await publish('flt.b.z', 'bz');
  await publish('flt.c.x', 'cx');
  const last = await publish('flt.a.x', 'ax2');
  const single = await collect('flt-single', ['flt.a.x']);
  const several = await collect('flt-several', ['flt.a.x', 'flt.b.*']);
  await waitFor('single', () => single.got.some((e) => e.id === last));
  // Ordered: an unsubscribed event published before `last` would have come before it.
  await waitFor('several', () => several.got.some((e) => e.id === last));
  expect(single.got.map((e) => dec(e.data))).toEqual(['ax', 'ax2']);
  expect(several.got.map((e) => e.id)).toEqual([ax, bz, last]);
});

test('wildcards * and > match like NATS', async () => {
  await publish('wc.one.done', '1');
  await publish('wc.two.done', '2');
  await publish('wc.two.open', '3');
  await publish('wc.three.deep.done', '4');
  const end = await publish('wc.end', '5');
  const star = await collect('wc-star', ['wc.*.done']);
  const tail = await collect('wc-tail', ['wc.>']);
  await waitFor('tail', () => tail.got.some((e) => e.id === end));
  // A sentinel both match, published last: the streams are ordered, so whatever either
  // should not have seen would have come before it.
  const sentinel = await publish('wc.last.done', '6');
  await waitFor('star sentinel', () => star.got.some((e) => e.id === sentinel));
  await waitFor('tail sentinel', () => tail.got.some((e) => e.id === sentinel));
  expect(star.got.map((e) => dec(e.data))).toEqual(['1', '2', '6']);
  expect(tail.got.map((e) => dec(e.data))).toEqual(['1', '2', '3', '4', '5', '6']);
});

test('subjectMatches', () => {
  expect(subjectMatches('a.b', 'a.b')).toBe(true);
  expect(subjectMatches('a.*', 'a.b')).toBe(true);
  expect(subjectMatches('a.*', 'a.b.c')).toBe(false);
  expect(subjectMatches('a.>', 'a.b.c')).toBe(true);
  expect(subjectMatches('a.>', 'a')).toBe(false);
  expect(subjectMatches('*.b', 'a.b')).toBe(true);
  expect(subjectMatches('a.b', 'a.c')).toBe(false);
  expect(subjectMatches('a.b.c', 'a.b')).toBe(false);
});

test('in-process bus: drained() is true only when every durable has handled every event it matches', async () => {
  const bus = createMemoryBus({ log: createLogger({ level: 'silent', name: 'test' }) });
  try {
    expect(bus.drained!()).toBe(true);
    // No consumer matches: nothing is owed to anyone.
    await bus.publish({ id: randomUUID(), subject: 'other.thing', data: enc('x') });
    expect(bus.drained!()).toBe(true);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let failOnce = true;
    const handled: string[] = [];
    const sub = await bus.subscribe({
      durable: 'drain-test',
      subjects: ['drain.>'],
      handler: async (e) => {
        await gate;
        if (failOnce) {
          failOnce = false;
          throw new Error('first delivery fails');
        }
        handled.push(e.id);
      },
    });
    const id = randomUUID();
    await bus.publish({ id, subject: 'drain.item', data: enc('y') });
    // Handed over, being handled (blocked): not drained.
    await sleep(20);
    expect(bus.drained!()).toBe(false);
    release();
    // Failed once: a retry is pending, still not drained; then handled.
    await waitFor('the retry to be handled', () => handled.length === 1);
    expect(bus.drained!()).toBe(true);
    await sub.stop();
    // Published while its durable is stopped: owed, so not drained.
    await bus.publish({ id: randomUUID(), subject: 'drain.later', data: enc('z') });
    expect(bus.drained!()).toBe(false);
  } finally {
    await bus.close();
  }
});
