/**
 * Operator reads: `psync workspace show`, `property show`, `webhook show`, `webhook health`,
 * `deliveries show`, `booking show`, `amenities list`. Each prints the record as the service holds it
 * (present.ts: snake_case fields, lower-case enum names, ISO 8601 times, null for
 * what is absent). Secrets are never part of these records.
 */
import { IdentityService, WorkspaceSchema } from '../../gen/psync/identity/v1/identity_pb';
import { AmenitySchema, CatalogService, GetPropertyResponseSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { BookingSchema, CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { DeliverySchema, EndpointHealthSchema, EndpointSchema, NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { UsageError } from './args';
import { command, type Command } from './registry';
import { presentMessage, UUID } from './present';

const WORKSPACE_FLAG = { value: 'WID', required: true, doc: 'the workspace id (a UUID, as printed by `psync workspace create`)' } as const;
const WORKSPACE_ERROR = '--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)';

export const showCommands: Record<string, Command> = {
  'workspace show': command({
    summary: 'a workspace: {"workspace_id","name","environment","created_at"}',
    flags: { workspace: WORKSPACE_FLAG },
    async run(f, { clients, baseUrl }) {
      if (!UUID.test(f.workspace)) throw new UsageError(WORKSPACE_ERROR);
      const res = await clients.client(IdentityService, baseUrl).getWorkspace({ workspaceId: f.workspace });
      return presentMessage(WorkspaceSchema, res.workspace!);
    },
  }),

  'property show': command({
    summary: 'a partner property as last pushed, with its listing id, publishability and photo states',
    flags: {
      workspace: WORKSPACE_FLAG,
      'provider-id': { value: 'PID', required: true, doc: "the partner's identifier of the property" },
    },
    async run(f, { clients, baseUrl }) {
      if (!UUID.test(f.workspace)) throw new UsageError(WORKSPACE_ERROR);
      if (f['provider-id'] === '') throw new UsageError('--provider-id must not be empty');
      const res = await clients.client(CatalogService, baseUrl).getProperty({ workspaceId: f.workspace, providerId: f['provider-id'] });
      return presentMessage(GetPropertyResponseSchema, res);
    },
  }),

  'webhook show': command({
    summary: "a workspace's webhook endpoint: URL, events, status, rotation overlap (never the secret)",
    flags: { workspace: WORKSPACE_FLAG },
    async run(f, { clients, baseUrl }) {
      if (!UUID.test(f.workspace)) throw new UsageError(WORKSPACE_ERROR);
      const res = await clients.client(NotificationsService, baseUrl).getEndpoint({ workspaceId: f.workspace });
      return presentMessage(EndpointSchema, res.endpoint!);
    },
  }),

  'deliveries show': command({
    summary: "one webhook delivery of a workspace with its recent attempts (status, duration, outcome, retry), as the partner's delivery log shows it",
    flags: {
      workspace: WORKSPACE_FLAG,
      event: { value: 'EVENT_ID', required: true, doc: "the delivery's event_id, as printed by `psync deliveries list`" },
    },
    async run(f, { clients, baseUrl }) {
      const problems = [
        ...(UUID.test(f.workspace) ? [] : [WORKSPACE_ERROR]),
        ...(UUID.test(f.event) ? [] : ['--event must be an event_id (a UUID, as printed by `psync deliveries list`)']),
      ];
      if (problems.length > 0) throw new UsageError(problems.join('; '));
      const res = await clients.client(NotificationsService, baseUrl).getDelivery({ workspaceId: f.workspace, eventId: f.event });
      return presentMessage(DeliverySchema, res.delivery!);
    },
  }),

  'webhook health': command({
    summary: "how deliveries to a workspace's endpoint are going: circuit breaker, hold (Retry-After), failures, backlog",
    flags: { workspace: WORKSPACE_FLAG },
    notes: [
      'breaker: closed (deliveries flow), open (attempts kept failing: nothing is sent before not_before, then one probe),',
      'half_open (the probe is in flight). hold_reason: breaker or retry_after while not_before holds the endpoint.',
    ],
    async run(f, { clients, baseUrl }) {
      if (!UUID.test(f.workspace)) throw new UsageError(WORKSPACE_ERROR);
      const res = await clients.client(NotificationsService, baseUrl).getEndpoint({ workspaceId: f.workspace });
      return { workspace_id: res.endpoint!.workspaceId, ...presentMessage(EndpointHealthSchema, res.health!) };
    },
  }),

  'booking show': command({
    summary: 'a booking: listing, nights, guest, amount, status, cancellation',
    flags: { booking: { value: 'REF', required: true, doc: 'the booking reference' } },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(CalendarService, baseUrl).getBooking({ bookingReference: f.booking });
      return presentMessage(BookingSchema, res.booking!);
    },
  }),

  'amenities list': command({
    summary: 'the amenity vocabulary partners may use, ordered by slug: {"items":[{"slug","name","category"}]}',
    flags: {},
    async run(_f, { clients, baseUrl }) {
      const res = await clients.client(CatalogService, baseUrl).listAmenities({});
      return { items: res.amenities.map((a) => presentMessage(AmenitySchema, a)) };
    },
  }),
};
