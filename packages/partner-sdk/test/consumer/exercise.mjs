/**
 * What the consumer programs (run.mjs, run.cjs) do with the package they loaded, each
 * through its own module system: sign and verify a delivery, refuse it with another
 * secret, and make one call through a client whose fetch is a scripted API.
 */

/** A scripted API: `POST /token` and `PUT /blocks/{external_uid}`. */
async function scriptedFetch(request) {
  const json = (status, body) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const path = new URL(request.url).pathname;
  if (request.method === 'POST' && path === '/v1/token') {
    return json(200, { access_token: 'tok-1', token_type: 'Bearer', expires_in: 900, workspace_id: '6f1c2e4a-9b3d-4c8e-a1f2-0d5e7b9c3a14', sandbox: true });
  }
  if (request.method === 'PUT' && path.startsWith('/v1/blocks/') && request.headers.get('authorization') === 'Bearer tok-1') {
    const block = await request.json();
    const nights = (Date.parse(block.check_out) - Date.parse(block.check_in)) / 86_400_000;
    return json(201, { result: 'created', nights, listing_id: block.listing_id });
  }
  return json(404, { message: `not scripted: ${request.method} ${path}` });
}

/** `sdk`: the package as `import` or `require` gave it; the result is printed as one JSON line. */
export async function exercise(sdk, module) {
  const { PartnerClient, signWebhook, verifyWebhook, WebhookVerificationError } = sdk;
  const body = JSON.stringify({
    event_id: '7d0c2c52-3c1e-4a8e-9a52-0c7e1b6f2d11',
    event_type: 'endpoint.challenge',
    occurred_at: '2030-08-01T10:00:00Z',
    data: { challenge: module },
  });
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = { 'x-signature': signWebhook(`whsec_${module}`, timestamp, body), 'x-signature-timestamp': String(timestamp) };
  const event = verifyWebhook(body, headers, [`whsec_${module}`]);
  let refused = '';
  try {
    verifyWebhook(body, headers, 'another-secret');
  } catch (e) {
    if (e instanceof WebhookVerificationError) refused = e.code;
  }
  const client = new PartnerClient({ baseUrl: 'https://api.partner.test/v1', apiKey: 'psk_test', fetch: scriptedFetch });
  const put = await client.putBlock('res-1', { listing_id: 'lst_1', check_in: '2030-08-01', check_out: '2030-08-04' });
  return JSON.stringify({ module, challenge: event.data.challenge, refused, nights: put.nights, tokenExchanges: client.tokenExchanges });
}
