/**
 * The console's session (console/src/session.ts) in Node, with a fetch that stands in
 * for the gateway and counts what reaches it: sign-out (`end()`) cancels what is in
 * flight, refuses every later call before it is sent, ends the session's waits, stops
 * the token renewal and a poll written as the pages write theirs, and forgets the
 * client. The browser test (console.test.ts) checks the same against the real system.
 */
import { keepFresh, Session, SessionEnded } from '../../console/src/session';
import { holdsFor } from '../support/eventually';

const BASE = 'http://gateway.test/v1';
const API_KEY = 'psk_test_session_0000000000000000000000';

/** A stand-in gateway: `POST /token` answers a token of `expiresIn` seconds; other calls hang until aborted, or answer at once with `answer`. */
function gateway(opts: { expiresIn?: number; answer?: unknown } = {}) {
  const seen: { method: string; path: string; authorization: string | null; at: number }[] = [];
  let tokens = 0;
  const fetch = (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname.slice('/v1'.length);
    seen.push({ method: request.method, path, authorization: request.headers.get('Authorization'), at: Date.now() });
    if (path === '/token') {
      const body = { access_token: `pst_${++tokens}`, token_type: 'Bearer', expires_in: opts.expiresIn ?? 900, workspace_id: 'ws_1', sandbox: true };
      return Promise.resolve(Response.json(body));
    }
    if (opts.answer !== undefined) return Promise.resolve(Response.json(opts.answer));
    return new Promise((_, reject) => {
      if (request.signal.aborted) reject(request.signal.reason);
      request.signal.addEventListener('abort', () => reject(request.signal.reason));
    });
  };
  return { seen, fetch };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a console session', () => {
  test('sign-out cancels the request in flight, refuses later calls unsent, ends the waits and forgets the client', async () => {
    const gw = gateway();
    const session = await Session.open({ baseUrl: BASE, apiKey: API_KEY, fetch: gw.fetch });
    expect(session.token.accessToken).toBe('pst_1');
    const client = session.client;
    const inFlight = client.listDeliveries();
    const waiting = session.sleep(60_000);
    let fired = false;
    session.later(30, () => (fired = true));
    await pause(5);
    expect(gw.seen.map((s) => `${s.method} ${s.path}`)).toEqual(['POST /token', 'GET /webhooks/deliveries']);

    session.end();
    expect(session.ended).toBe(true);
    await expect(inFlight).rejects.toBeInstanceOf(SessionEnded);
    await expect(waiting).rejects.toBeInstanceOf(SessionEnded);
    expect(() => session.client).toThrow(SessionEnded);
    // Even a client held from before (a closure of a page) sends nothing any more.
    await expect(client.listDeliveries()).rejects.toBeInstanceOf(SessionEnded);
    await expect(session.sleep(1)).rejects.toBeInstanceOf(SessionEnded);
    let late = false;
    session.later(1, () => (late = true));
    await pause(60);
    expect([fired, late]).toEqual([false, false]);
    expect(gw.seen).toHaveLength(2); // nothing reached the gateway after sign-out
  });

  test('a poll written as the pages write it (wait, read, repeat) stops at sign-out', async () => {
    const gw = gateway({ answer: { id: 'run_1', status: 'running' } });
    const session = await Session.open({ baseUrl: BASE, apiKey: API_KEY, fetch: gw.fetch });
    const poll = (async () => {
      for (let i = 0; i < 1000; i++) {
        await session.sleep(10);
        await session.client.getEndpointCheck('run_1');
      }
    })();
    await pause(80);
    const before = gw.seen.length;
    expect(before).toBeGreaterThan(2);
    session.end();
    await expect(poll).rejects.toBeInstanceOf(SessionEnded);
    await pause(80);
    expect(gw.seen).toHaveLength(before);
  });

  test('the token is renewed while the page sits idle, and never after sign-out', async () => {
    // A 2-second token: the page renews it 1.6 s after the exchange (renewal.ts), as the SDK would.
    const gw = gateway({ expiresIn: 2 });
    const session = await Session.open({ baseUrl: BASE, apiKey: API_KEY, fetch: gw.fetch });
    const renewed: string[] = [];
    keepFresh(
      session,
      (t) => renewed.push(t.accessToken),
      (e) => {
        throw e;
      },
    );
    for (let i = 0; i < 50 && renewed.length === 0; i++) await pause(100);
    expect(renewed).toEqual(['pst_2']);
    session.end();
    const endedAt = Date.now();
    // Past the next renewal point (1.6 s after the last exchange): nothing more.
    await holdsFor('no renewal and no request after sign-out', () => renewed.length === 1 && !gw.seen.some((s) => s.at >= endedAt), 2500);
  });

  test('a refused key leaves no session behind', async () => {
    const fetch = (): Promise<Response> => Promise.resolve(Response.json({ message: 'invalid API key' }, { status: 401 }));
    await expect(Session.open({ baseUrl: BASE, apiKey: API_KEY, fetch })).rejects.toThrow('invalid API key');
  });
});
