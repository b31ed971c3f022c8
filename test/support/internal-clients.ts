/**
 * Connect clients (gRPC over h2c) of the internal services at a running system's
 * internal URL, sharing one HTTP/2 session and calling each RPC with a test credential
 * of a role allowed to call it (credentials.ts), and the workspace factory the service
 * tests start from. Shared by the calendar, catalog and identity tests.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { credentialInterceptor } from './credentials';

export type CalendarClient = Client<typeof CalendarService>;
export type CatalogClient = Client<typeof CatalogService>;
export type IdentityClient = Client<typeof IdentityService>;

export interface InternalClients {
  calendar: CalendarClient;
  catalog: CatalogClient;
  identity: IdentityClient;
  /** Ends the shared HTTP/2 session (an open one keeps Jest's worker alive). */
  close(): void;
}

/** Clients of the calendar, catalog and identity services at `baseUrl`. */
export function internalClients(baseUrl: string, timeoutMs = 30000): InternalClients {
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport = createGrpcTransport({ baseUrl, sessionManager, defaultTimeoutMs: timeoutMs, interceptors: [credentialInterceptor()] });
  return {
    calendar: createClient(CalendarService, transport),
    catalog: createClient(CatalogService, transport),
    identity: createClient(IdentityService, transport),
    close: () => sessionManager.abort(),
  };
}

/** A new workspace's id; `label` names the test suite in the workspace's name. */
export async function createWorkspace(identity: IdentityClient, env: 'sandbox' | 'production', label: string): Promise<string> {
  const res = await identity.createWorkspace({
    name: `${label} ${Math.random().toString(36).slice(2, 8)}`,
    environment: env === 'sandbox' ? Environment.SANDBOX : Environment.PRODUCTION,
  });
  return res.workspace!.workspaceId;
}
