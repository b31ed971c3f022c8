/**
 * The set-up a webhook test file shares, registered as its beforeAll/afterAll: test
 * certificates, the partner receiver on https://localhost:8443 (waiting while another
 * file holds the port), the system under test, its internal clients and the best event
 * driver; all torn down afterwards.
 */
import { stopAllSystems, type RunningSystem, type StartOptions } from '../../support/system';
import { createCertificates, type Certificates } from '../../support/tls';
import { SystemClients, eventDriver, startWebhookSystem, type EventDriver } from './harness';
import { Receiver } from './receiver';

export interface WebhookSuite {
  certs: Certificates;
  receiver: Receiver;
  system: RunningSystem;
  clients: SystemClients;
  /** How the tests make events happen (harness.ts `eventDriver`). */
  driver: EventDriver;
  /** `test` whose body gets the suite's event driver. */
  withEvents(name: string, fn: (d: EventDriver) => Promise<void>, timeout?: number): void;
}

/** Registers the hooks; the returned object's fields are set once beforeAll has run. */
export function webhookSuite(label: string, opts: StartOptions = {}): WebhookSuite {
  const suite = {
    withEvents(name, fn, timeout) {
      test(name, () => fn(suite.driver), timeout);
    },
  } as Partial<WebhookSuite> as WebhookSuite;

  beforeAll(async () => {
    suite.certs = await createCertificates();
    suite.receiver = new Receiver(suite.certs);
    await suite.receiver.listen();
    suite.system = await startWebhookSystem(suite.certs, opts);
    suite.clients = new SystemClients(suite.system.internalUrl);
    suite.driver = await eventDriver(suite.system, suite.clients);
  }, 600_000);

  afterAll(async () => {
    await suite.driver?.close();
    suite.clients?.close();
    await stopAllSystems();
    await suite.receiver?.close();
    suite.certs?.remove();
  });

  return suite;
}
