/**
 * The webhook poster (services/notifications/webhook-poster.ts) in a process of its
 * own, for test/notifications/connections.test.ts. The test's CA is trusted only
 * through NODE_EXTRA_CA_CERTS, which Node reads at start-up, so a poster with a
 * resolver the test controls has to run here: the "DNS" is a file of addresses (one
 * per line) read at every resolution, so the test can change the answer between
 * connections.
 *
 * Environment: PROBE_DNS_FILE, EGRESS_ALLOW_CIDRS (comma-separated), NODE_EXTRA_CA_CERTS.
 * stdin, one command per line:
 *   post <url> <endpoint>   → {"status":…} or {"error":…}, plus "resolutions" so far
 *   close                   → {"closed":true} after poster.close()
 * stdout: one JSON line per command. The process ends when stdin does.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { createInterface } from 'node:readline';
import type { Resolver } from '../../../services/kit/egress';
import { createWebhookPoster } from '../../../services/notifications/webhook-poster';

let resolutions = 0;
const fileDns: Resolver = async () => {
  resolutions++;
  return readFileSync(process.env.PROBE_DNS_FILE!, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((address) => ({ address, family: net.isIP(address) === 6 ? (6 as const) : (4 as const) }));
};

const poster = createWebhookPoster({
  allowCidrs: (process.env.EGRESS_ALLOW_CIDRS ?? '').split(',').filter(Boolean),
  resolver: fileDns,
  connectionsPerEndpoint: 8,
});

const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

// Commands run one at a time, in order.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, url, endpoint] = line.trim().split(/\s+/);
  queue = queue.then(async () => {
    if (command === 'post') {
      const res = await poster.post(url!, '{"event_type":"probe"}', { 'content-type': 'application/json' }, { timeoutMs: 5000, maxResponseBytes: 65536, endpoint });
      reply({ ...('status' in res ? { status: res.status } : { error: res.error }), resolutions });
    } else if (command === 'close') {
      poster.close();
      reply({ closed: true });
    } else {
      reply({ unknown: command });
    }
  });
});
