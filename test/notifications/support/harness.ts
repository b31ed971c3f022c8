/**
 * What the notifications tests share: the system under test configured for a local
 * partner receiver, the internal NotificationsService client, the operator CLI,
 * and an event driver that makes the calendar publish booking and erasure events.
 */
import { credentialInterceptor, TEST_TOKENS } from '../../support/credentials';
import { randomBytes } from 'node:crypto';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { InternalClients } from '../../../services/kit/rpc';
import { NotificationsService } from '../../../gen/psync/notifications/v1/notifications_pb';
import { Environment } from '../../../gen/psync/common/v1/environment_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { CancellationInitiator } from '../../../gen/psync/calendar/v1/events_pb';
import { CalendarService } from '../../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../../gen/psync/identity/v1/identity_pb';
import { runCommand, startSystem, type RunningSystem, type StartOptions } from '../../support/system';
import { ROOT } from '../../support/process';
import type { Certificates } from '../../support/tls';

/** A fixed key for real-PostgreSQL runs (the embedded default generates its own). */
export const TEST_SECRETS_KEY = randomBytes(32).toString('base64');

/** The environment every notifications test system gets. */
export function webhookEnv(certs: Certificates, extra: Record<string, string> = {}): Record<string, string> {
  return {
    EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
    NODE_EXTRA_CA_CERTS: certs.caFile,
    WEBHOOK_RETRY_SCHEDULE: '1,1,1',
    ...(process.env.DATABASE_URL ? { SECRETS_ENCRYPTION_KEY: TEST_SECRETS_KEY } : {}),
    ...extra,
  };
}

/** Starts the whole system for webhook tests. */
export function startWebhookSystem(certs: Certificates, opts: StartOptions = {}): Promise<RunningSystem> {
  return startSystem({ ...opts, env: webhookEnv(certs, opts.env) });
}

/** Where each service of a system is served. */
export type ServiceUrls = Record<'identity' | 'catalog' | 'calendar' | 'notifications', string>;

/** Connect clients of one system's internal API: one URL for all services, or one each (split mode). */
export class SystemClients {
  private readonly clients = new InternalClients([credentialInterceptor()], 30_000);
  private readonly urls: ServiceUrls;
  constructor(baseUrl: string | ServiceUrls) {
    this.urls = typeof baseUrl === 'string' ? { identity: baseUrl, catalog: baseUrl, calendar: baseUrl, notifications: baseUrl } : baseUrl;
  }
  get notifications(): Client<typeof NotificationsService> {
    return this.clients.client(NotificationsService, this.urls.notifications);
  }
  get calendar(): Client<typeof CalendarService> {
    return this.clients.client(CalendarService, this.urls.calendar);
  }
  get catalog(): Client<typeof CatalogService> {
    return this.clients.client(CatalogService, this.urls.catalog);
  }
  get identity(): Client<typeof IdentityService> {
    return this.clients.client(IdentityService, this.urls.identity);
  }
  close(): void {
    this.clients.close();
  }
}

/** Runs `bin/psync …` against `system`; resolves with the parsed JSON (or rejects with stderr). */
export async function psync(system: RunningSystem, args: string[]): Promise<any> {
  const res = await runCommand(`${ROOT}/bin/psync`, args, { ...process.env, PSYNC_INTERNAL_URL: system.internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator });
  if (res.code !== 0) throw new Error(`psync ${args.join(' ')} exited ${res.code}: ${res.stderr.trim()}`);
  return JSON.parse(res.stdout);
}

/** Runs `bin/psync …` expecting a failure; resolves with exit code and stderr. */
export async function psyncFails(system: RunningSystem, args: string[]): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const res = await runCommand(`${ROOT}/bin/psync`, args, { ...process.env, PSYNC_INTERNAL_URL: system.internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator });
  return { code: res.code, stderr: res.stderr, stdout: res.stdout };
}

/** The ConnectError thrown by `p` (fails the test if it resolves). */
export async function rpcError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

/** Code, reason and violations of an error: what the gateway maps to a problem document. */
export function errorShape(err: ConnectError): { code: string; reason: string; violations: { field: string; code: string }[]; message: string } {
  const detail = err.findDetails(ErrorDetailSchema)[0];
  const validation = err.findDetails(ValidationDetailSchema)[0];
  return {
    code: Code[err.code] ?? String(err.code),
    reason: ErrorReason[detail?.reason ?? 0] ?? 'UNKNOWN',
    violations: (validation?.violations ?? []).map((v) => ({ field: v.field, code: v.code })),
    message: err.rawMessage,
  };
}

/** The shared bounded wait (test/support/eventually.ts), as the notifications tests have always imported it from here. */
export { eventually, holdsFor, sleep } from '../../support/eventually';

// ---------------------------------------------------------------------------
// Event drivers: how a test makes booking and erasure events happen.

export interface BookingMade {
  bookingReference: string;
  /** The domain event id, when the driver knows it (bus driver). */
  eventId?: string;
}

export interface EventDriver {
  /**
   * 'calendar': through the running system's calendar RPCs. (Events published on NATS
   * by anyone else are refused: test/notifications/forged-events.test.ts.)
   */
  readonly kind: 'calendar';
  /** A workspace to register endpoints for. */
  newWorkspace(environment?: 'sandbox' | 'production'): Promise<string>;
  confirmBooking(workspaceId: string, guest: { guestId: string; guestName: string }): Promise<BookingMade>;
  cancelBooking(workspaceId: string, bookingReference: string, initiatedBy: 'guest' | 'host'): Promise<{ eventId?: string }>;
  /** Erases a guest; the calendar emits user.erased to each workspace holding their bookings. */
  eraseGuest(guestId: string): Promise<void>;
  close(): Promise<void>;
}

/** Drives the running system's identity, catalog and calendar RPCs. */
class CalendarDriver implements EventDriver {
  readonly kind = 'calendar' as const;
  private readonly listings = new Map<string, string>();
  private nextNight = 0;

  constructor(private readonly c: SystemClients) {}

  async newWorkspace(environment: 'sandbox' | 'production' = 'sandbox'): Promise<string> {
    const res = await this.c.identity.createWorkspace({
      name: `notifications-test-${randomBytes(3).toString('hex')}`,
      environment: environment === 'sandbox' ? Environment.SANDBOX : Environment.PRODUCTION,
    });
    return res.workspace!.workspaceId;
  }

  private async listing(workspaceId: string): Promise<string> {
    let l = this.listings.get(workspaceId);
    if (!l) {
      const res = await this.c.catalog.createListing({ workspaceId });
      l = res.listing!.listingId;
      this.listings.set(workspaceId, l);
    }
    return l;
  }

  async confirmBooking(workspaceId: string, guest: { guestId: string; guestName: string }): Promise<BookingMade> {
    const listingId = await this.listing(workspaceId);
    const start = new Date(Date.UTC(2031, 0, 1) + this.nextNight++ * 3 * 86_400_000);
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const res = await this.c.calendar.confirmBooking({
      listingId,
      checkIn: day(start),
      checkOut: day(new Date(start.getTime() + 2 * 86_400_000)),
      guestId: guest.guestId,
      guestName: guest.guestName,
      partySize: 2,
      amountPaid: { value: '123.45', currency: 'EUR' },
      requiresPayment: false,
    });
    return { bookingReference: res.booking!.bookingReference };
  }

  async cancelBooking(_ws: string, bookingReference: string, initiatedBy: 'guest' | 'host'): Promise<{ eventId?: string }> {
    await this.c.calendar.cancelBooking({
      bookingReference,
      initiatedBy: initiatedBy === 'host' ? CancellationInitiator.HOST : CancellationInitiator.GUEST,
    });
    return {};
  }

  async eraseGuest(guestId: string): Promise<void> {
    await this.c.calendar.eraseGuest({ guestId });
  }

  async close(): Promise<void> {}
}

/** The driver of `system`: its calendar's own RPCs, the only source of events notifications accepts. */
export async function eventDriver(_system: RunningSystem, clients: SystemClients): Promise<EventDriver> {
  return new CalendarDriver(clients);
}
