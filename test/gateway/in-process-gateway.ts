/**
 * The gateway app in this process with its internal services unreachable (a closed
 * port), for what the gateway answers on its own: 404/405, 401 without a token, the
 * OpenAPI document, the sandbox console's files.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ConsoleFiles } from '../../gateway/console';
import { createGatewayApp } from '../../gateway/app';
import type { Config } from '../../services/kit/runtime';
import { InternalClients } from '../../services/kit/rpc';
import type { Logger } from '../../services/kit/base';
import { credentialInterceptor } from '../support/credentials';
import { freePort } from '../support/system';

export interface InProcessGateway {
  /** `http://127.0.0.1:<port>` */
  base: string;
  close(): Promise<void>;
}

/** Starts the app of `config` logging to `log`, serving `consoleFiles` (default: console/dist). */
export async function startInProcessGateway(config: Config, log: Logger, consoleFiles?: ConsoleFiles): Promise<InProcessGateway> {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const clients = new InternalClients([credentialInterceptor()], 2000);
  const app = createGatewayApp({ config, log, clients, urls: { identity: dead, catalog: dead, calendar: dead, notifications: dead } }, () => false, undefined, consoleFiles);
  const server = http.createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      clients.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
