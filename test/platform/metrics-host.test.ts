/**
 * Where /metrics listens (METRICS_HOST): the all-in-one keeps it on loopback like its
 * internal port (test/platform/private-data-dir.test.ts checks the default), and
 * METRICS_HOST opens it; a one-role process, as the chart runs them, binds HOST as
 * before, so the chart's scrapes keep working.
 */
import { listeningAddresses } from '../support/listening';
import { backends, freePort, startSystem, stopAllSystems } from '../support/system';

describe(`METRICS_HOST (database: ${backends.database})`, () => {
  afterAll(() => stopAllSystems());

  test('role all with METRICS_HOST=0.0.0.0: /metrics on every address, the internal port still on loopback', async () => {
    const metricsPort = await freePort();
    const system = await startSystem({ env: { METRICS_PORT: String(metricsPort), METRICS_HOST: '0.0.0.0' } });
    try {
      const addresses = listeningAddresses(system.child.pid!);
      expect(addresses).toContain(`0.0.0.0:${metricsPort}`);
      expect(addresses).toContain(`127.0.0.1:${system.env.INTERNAL_PORT}`);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
    } finally {
      await system.stop();
    }
  }, 120_000);

  test('a one-role process (the chart): /metrics on HOST, unchanged', async () => {
    const metricsPort = await freePort();
    const system = await startSystem({ role: 'identity', env: { METRICS_PORT: String(metricsPort), HOST: '0.0.0.0' } });
    try {
      const addresses = listeningAddresses(system.child.pid!);
      expect(addresses).toContain(`0.0.0.0:${metricsPort}`);
      expect(addresses).toContain(`0.0.0.0:${system.env.INTERNAL_PORT}`);
    } finally {
      await system.stop();
    }
  }, 120_000);
});
