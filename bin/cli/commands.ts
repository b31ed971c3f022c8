/**
 * The psync commands. Each takes its parsed flags and the internal API clients and
 * returns the one JSON object to print. Commands arrive with the issues that own
 * their behaviour; operator-interface.md lists the full set.
 */
import type { InternalClients } from '../../services/kit/internal-client';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { takeFlags, UsageError } from './args';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  DeletionRequestState,
  DeliveryState,
  EndpointStatus,
  NotificationsService,
  WebhookEventType,
  type Delivery,
} from '../../gen/psync/notifications/v1/notifications_pb';

export interface CommandContext {
  flags: Map<string, string>;
  clients: InternalClients;
  /** PSYNC_INTERNAL_URL. */
  baseUrl: string;
}

export type Command = (ctx: CommandContext) => Promise<Record<string, unknown>>;

export const commands: Record<string, Command> = {
  /** Runs every hosted service's pending migrations in the running system (idempotent). */
  async migrate({ flags, clients, baseUrl }) {
    takeFlags(flags, []);
    const res = await clients.client(AdminService, baseUrl).migrate({});
    return { migrated: res.migrated, schemas: res.schemas };
  },

  /** Creates a workspace; its environment is fixed for ever. */
  async 'workspace create'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['name', 'env']);
    const length = [...f.name].length;
    if (f.name.trim() === '' || length > 200) throw new UsageError('--name must be 1 to 200 characters');
    if (!Object.hasOwn(ENVIRONMENTS, f.env)) throw new UsageError('--env must be sandbox or production');
    const environment = ENVIRONMENTS[f.env as keyof typeof ENVIRONMENTS];
    const res = await clients.client(IdentityService, baseUrl).createWorkspace({ name: f.name, environment });
    const ws = res.workspace!;
    return { workspace_id: ws.workspaceId, name: ws.name, environment: environmentName(ws.environment) };
  },

  /** Issues an API key for a workspace; the key is printed here and never again. */
  async 'key issue'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['workspace']);
    if (!UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    const res = await clients.client(IdentityService, baseUrl).issueKey({ workspaceId: f.workspace });
    return { key_id: res.keyId, api_key: res.apiKey, workspace_id: res.workspaceId, environment: environmentName(res.environment) };
  },

  /** Revokes an API key by its id; its outstanding tokens fail on their next request. Idempotent. */
  async 'key revoke'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['key']);
    // Never echo the value: it may be a whole API key pasted by mistake.
    if (f.key.startsWith('psk_')) throw new UsageError('--key takes the key id (the 16 characters after "psk_"), not the whole API key');
    if (!/^[a-z2-7]{16}$/.test(f.key)) throw new UsageError('--key must be a key id: 16 characters a-z and 2-7, as printed by `psync key issue`');
    const res = await clients.client(IdentityService, baseUrl).revokeKey({ keyId: f.key });
    return { key_id: res.keyId, revoked: res.revoked };
  },
  /** Creates a marketplace listing the partner did not push (sandbox or production workspace). */
  async 'listing create'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['workspace'], ['name']);
    if (!UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    const res = await clients.client(CatalogService, baseUrl).createListing({ workspaceId: f.workspace, name: f.name });
    return { listing_id: res.listing!.listingId };
  },

  /** Places a live marketplace hold (default lifetime HOLD_TTL_SECONDS, 900 s); never one that would charge. */
  async 'hold place'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['listing', 'check-in', 'check-out'], ['ttl-seconds']);
    let ttlSeconds: number | undefined;
    if (f['ttl-seconds'] !== undefined) {
      if (!/^[1-9]\d{0,5}$/.test(f['ttl-seconds'])) throw new UsageError('--ttl-seconds must be a whole number of seconds, 1 to 86400');
      ttlSeconds = Number(f['ttl-seconds']);
    }
    const calendar = clients.client(CalendarService, baseUrl);
    const res = await calendar.placeHold({ listingId: f.listing, checkIn: f['check-in'], checkOut: f['check-out'], ttlSeconds, requiresPayment: false });
    return { hold_id: res.hold!.holdId };
  },

  /** Releases a hold (idempotent: an expired or released hold answers released too). */
  async 'hold release'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['hold']);
    const res = await clients.client(CalendarService, baseUrl).releaseHold({ holdId: f.hold });
    return { hold_id: res.holdId, released: res.released };
  },

  /** Confirms a booking on free nights; never reaches a payment provider (requires_payment false). */
  async 'booking confirm'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['listing', 'check-in', 'check-out', 'guest-id', 'guest-name', 'party-size', 'amount', 'currency']);
    if (!/^[1-9]\d{0,2}$/.test(f['party-size'])) throw new UsageError('--party-size must be a whole number of guests');
    if (!/^\d+(\.\d+)?$/.test(f.amount)) throw new UsageError('--amount must be a decimal amount such as 123.45');
    if (!/^[A-Za-z]{3}$/.test(f.currency)) throw new UsageError('--currency must be a three-letter currency code such as EUR');
    const res = await clients.client(CalendarService, baseUrl).confirmBooking({
      listingId: f.listing,
      checkIn: f['check-in'],
      checkOut: f['check-out'],
      guestId: f['guest-id'],
      guestName: f['guest-name'],
      partySize: Number(f['party-size']),
      amountPaid: { value: f.amount, currency: f.currency.toUpperCase() },
      requiresPayment: false,
    });
    return { booking_reference: res.booking!.bookingReference };
  },

  /** Cancels a booking: guest → nights re-sellable; host → the property withdrew, nights stay closed. */
  async 'booking cancel'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['booking', 'initiated-by']);
    const initiators = { guest: CancellationInitiator.GUEST, host: CancellationInitiator.HOST } as const;
    if (!Object.hasOwn(initiators, f['initiated-by'])) throw new UsageError('--initiated-by must be guest or host');
    const by = initiators[f['initiated-by'] as keyof typeof initiators];
    const res = await clients.client(CalendarService, baseUrl).cancelBooking({ bookingReference: f.booking, initiatedBy: by });
    return { booking_reference: res.bookingReference, cancelled: res.cancelled };
  },

  /** Erases a guest: scrubs their data at once and sends user.erased to every partner holding their records. */
  async 'user erase'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['guest-id']);
    const res = await clients.client(CalendarService, baseUrl).eraseGuest({ guestId: f['guest-id'] });
    return { erasure_id: res.erasureId };
  },

  /** Mints a new webhook signing secret; the previous one signs X-Signature-Previous until previous_valid_until. */
  async 'webhook rotate-secret'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['workspace'], ['overlap-seconds']);
    if (!UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    let overlapSeconds: number | undefined;
    if (f['overlap-seconds'] !== undefined) {
      if (!/^\d+$/.test(f['overlap-seconds'])) throw new UsageError('--overlap-seconds must be a whole number of seconds');
      overlapSeconds = Number(f['overlap-seconds']);
    }
    const res = await clients.client(NotificationsService, baseUrl).rotateSecret({ workspaceId: f.workspace, overlapSeconds });
    return { signing_secret: res.signingSecret, previous_valid_until: isoOrNull(res.previousValidUntil) };
  },

  /** A workspace's webhook deliveries, newest first (at most 500). */
  async 'deliveries list'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['workspace'], ['state']);
    if (!UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    const state = f.state === undefined ? undefined : DELIVERY_STATES[f.state as keyof typeof DELIVERY_STATES];
    if (f.state !== undefined && state === undefined) throw new UsageError('--state must be pending, delivered or abandoned');
    const res = await clients.client(NotificationsService, baseUrl).listDeliveries({ workspaceId: f.workspace, state });
    return { items: res.items.map(deliveryItem) };
  },

  /**
   * Re-queues abandoned deliveries of a workspace (one, or all): pending again with a
   * fresh retry schedule, the same event_id and body. Delivered and pending ones are left
   * alone; an event_id the workspace has no delivery for fails (NotFound).
   */
  async 'deliveries replay'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, ['workspace'], ['event', 'all-abandoned']);
    if (!UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    if ((f.event === undefined) === (f['all-abandoned'] === undefined)) throw new UsageError('give exactly one of --event EVENT_ID or --all-abandoned');
    if (f.event !== undefined && !UUID.test(f.event)) throw new UsageError('--event must be an event_id (a UUID, as printed by `psync deliveries list`)');
    const res = await clients.client(NotificationsService, baseUrl).replayDeliveries({
      workspaceId: f.workspace,
      selection: f.event !== undefined ? { case: 'eventId', value: f.event } : { case: 'allAbandoned', value: true },
    });
    const statuses: Partial<Record<EndpointStatus, string>> = {
      [EndpointStatus.PENDING_VERIFICATION]: 'pending_verification',
      [EndpointStatus.ACTIVE]: 'active',
      [EndpointStatus.SUSPENDED]: 'suspended',
    };
    return {
      replayed: res.items.length,
      items: res.items.map(deliveryItem),
      not_replayable: res.notReplayable,
      endpoint_status: statuses[res.endpointStatus] ?? null,
    };
  },

  /** Deletion requests (one per user.erased delivery), newest first; escalated = unacknowledged too long. */
  async 'deletion-requests list'({ flags, clients, baseUrl }) {
    const f = takeFlags(flags, [], ['workspace', 'state']);
    if (f.workspace !== undefined && !UUID.test(f.workspace)) throw new UsageError('--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)');
    const states = { open: DeletionRequestState.OPEN, acknowledged: DeletionRequestState.ACKNOWLEDGED, escalated: DeletionRequestState.ESCALATED };
    const state = f.state === undefined ? undefined : states[f.state as keyof typeof states];
    if (f.state !== undefined && state === undefined) throw new UsageError('--state must be open, acknowledged or escalated');
    const res = await clients.client(NotificationsService, baseUrl).listDeletionRequests({ workspaceId: f.workspace ?? '', state });
    return {
      items: res.items.map((r) => ({
        event_id: r.eventId,
        workspace_id: r.workspaceId,
        state: (Object.keys(states) as (keyof typeof states)[]).find((k) => states[k] === r.state) ?? 'open',
        booking_references: r.bookingReferences,
        provider_ids: r.providerIds,
        created_at: isoOrNull(r.createdAt),
        acknowledged_at: isoOrNull(r.acknowledgedAt),
        completed_at: isoOrNull(r.completedAt),
        escalated_at: isoOrNull(r.escalatedAt),
      })),
    };
  },
};

const ENVIRONMENTS = { sandbox: Environment.SANDBOX, production: Environment.PRODUCTION } as const;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** The operator-facing name of an environment. */
function environmentName(env: Environment): string {
  return env === Environment.SANDBOX ? 'sandbox' : env === Environment.PRODUCTION ? 'production' : 'unspecified';
}

/** A protobuf Timestamp as ISO 8601, or null when absent. */
function isoOrNull(t: Timestamp | undefined): string | null {
  return t ? timestampDate(t).toISOString() : null;
}

const DELIVERY_STATES = { pending: DeliveryState.PENDING, delivered: DeliveryState.DELIVERED, abandoned: DeliveryState.ABANDONED } as const;

/** A delivery as the operator sees it (operator-interface.md, "deliveries list item"). */
function deliveryItem(d: Delivery): Record<string, unknown> {
  return {
    event_id: d.eventId,
    event_type: webhookEventTypeName(d.eventType),
    state: (Object.keys(DELIVERY_STATES) as (keyof typeof DELIVERY_STATES)[]).find((k) => DELIVERY_STATES[k] === d.state) ?? 'pending',
    attempts: d.attempts,
    last_status: d.lastStatus ?? null,
    next_attempt_at: isoOrNull(d.nextAttemptAt),
  };
}

/** The public name of a webhook event kind ("booking.confirmed" …). */
function webhookEventTypeName(t: WebhookEventType): string {
  switch (t) {
    case WebhookEventType.ENDPOINT_CHALLENGE:
      return 'endpoint.challenge';
    case WebhookEventType.BOOKING_CONFIRMED:
      return 'booking.confirmed';
    case WebhookEventType.BOOKING_CANCELLED:
      return 'booking.cancelled';
    case WebhookEventType.USER_ERASED:
      return 'user.erased';
    default:
      return 'unknown';
  }
}
