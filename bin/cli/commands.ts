/**
 * The psync commands that change things (and the delivery and deletion-request lists).
 * Each declares its flags and returns the one JSON object to print;
 * docs/operator-cli.md lists the full set, `command-set.ts` puts them in order.
 */
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiatorSchema, type CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import {
  DeletionRequestStateSchema,
  DeliveryStateSchema,
  EndpointStatusSchema,
  NotificationsService,
  type DeletionRequestState,
  type Delivery,
  type DeliveryState,
  type EndpointStatus,
} from '../../gen/psync/notifications/v1/notifications_pb';
import { EnumNames, environments } from '../../services/kit/base';
import { UsageError } from './args';
import { command, type Command } from './registry';
import { credentialIdCheck } from './credential-id';
import { environmentName, isoOrNull, UUID, webhookEventTypeName } from './present';

const WORKSPACE_ERROR = '--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)';
const workspaceCheck = (v: string) => (UUID.test(v) ? undefined : WORKSPACE_ERROR);
const WORKSPACE_FLAG = { value: 'WID', required: true, check: workspaceCheck, doc: 'the workspace id (a UUID, as printed by `psync workspace create`)' } as const;

/** A `check` refusing values that do not match `pattern` with `problem`. */
const matching = (pattern: RegExp, problem: string) => (v: string) => (pattern.test(v) ? undefined : problem);
/** A `check` allowing only the keys of `choices`. */
const oneOf = (choices: EnumNames<number>, problem: string) => (v: string) => (choices.find(v) !== undefined ? undefined : problem);

/** Flag values ↔ enum values, from the enums' descriptors (`owner_stay`, `pending_verification`). */
const INITIATORS = new EnumNames<CancellationInitiator>(CancellationInitiatorSchema);
const DELIVERY_STATES = new EnumNames<DeliveryState>(DeliveryStateSchema);
const DELETION_STATES = new EnumNames<DeletionRequestState>(DeletionRequestStateSchema);
const ENDPOINT_STATUSES = new EnumNames<EndpointStatus>(EndpointStatusSchema);
/**
 * `--idempotency-key` of the calendar's writes (docs/marketplace.md "Idempotency keys"): the
 * RPCs' own rule, 1 to 255 visible ASCII characters; the service checks it again.
 */
const IDEMPOTENCY_KEY_FLAG = {
  value: 'KEY',
  check: matching(/^[\x21-\x7e]{1,255}$/, '--idempotency-key must be 1 to 255 visible ASCII characters (no spaces), e.g. a UUID'),
  doc: 'makes a retry safe: the same key with the same flags answers what the first call did (kept 24 h); with other flags it is refused',
} as const;

/** The fields of a delivery item (deliveryItem), as `--output table` columns. */
const DELIVERY_COLUMNS = ['event_id', 'event_type', 'state', 'attempts', 'last_status', 'next_attempt_at'];

export const operationCommands: Record<string, Command> = {
  migrate: command({
    summary: "runs every hosted service's pending migrations in the running system (idempotent; also done at start-up)",
    flags: {},
    async run(_f, { clients, baseUrl }) {
      const res = await clients.client(AdminService, baseUrl).migrate({});
      return { migrated: res.migrated, schemas: res.schemas };
    },
  }),

  'workspace create': command({
    summary: 'creates a workspace; its environment is fixed for ever',
    flags: {
      name: {
        value: 'NAME',
        required: true,
        check: (v) => (v.trim() === '' || [...v].length > 200 ? '--name must be 1 to 200 characters' : undefined),
        doc: 'a human-readable name, 1 to 200 characters',
      },
      env: { value: 'sandbox|production', required: true, check: oneOf(environments, '--env must be sandbox or production'), doc: 'the environment' },
    },
    async run(f, { clients, baseUrl }) {
      const environment = environments.value(f.env);
      const res = await clients.client(IdentityService, baseUrl).createWorkspace({ name: f.name, environment });
      const ws = res.workspace!;
      return { workspace_id: ws.workspaceId, name: ws.name, environment: environmentName(ws.environment) };
    },
  }),

  'key issue': command({
    summary: 'issues an API key for a workspace; the key is printed here and never again',
    flags: { workspace: WORKSPACE_FLAG },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).issueKey({ workspaceId: f.workspace });
      return { key_id: res.keyId, api_key: res.apiKey, workspace_id: res.workspaceId, environment: environmentName(res.environment) };
    },
  }),

  'key revoke': command({
    summary: 'revokes an API key by its id; its outstanding tokens fail on their next request (idempotent)',
    flags: {
      key: {
        value: 'KEY_ID',
        required: true,
        check: credentialIdCheck({ flag: 'key', id: 'key id', prefix: 'psk_', whole: 'API key' }),
        doc: 'the key id (16 characters a-z, 2-7), as printed by `psync key issue`; not the whole key',
      },
    },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).revokeKey({ keyId: f.key });
      return { key_id: res.keyId, revoked: res.revoked };
    },
  }),

  'listing create': command({
    summary: 'creates a marketplace listing of a workspace that the partner did not push (sandbox or production)',
    flags: { workspace: WORKSPACE_FLAG, name: { value: 'NAME', doc: 'a name for the listing' } },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(CatalogService, baseUrl).createListing({ workspaceId: f.workspace, name: f.name });
      return { listing_id: res.listing!.listingId };
    },
  }),

  'hold place': command({
    summary: "places a live marketplace hold on a listing's nights (never one that would charge)",
    flags: {
      listing: { value: 'LID', required: true, doc: 'the listing id' },
      'check-in': { value: 'D', required: true, doc: 'first night, YYYY-MM-DD' },
      'check-out': { value: 'D', required: true, doc: 'departure day (exclusive), YYYY-MM-DD' },
      'ttl-seconds': {
        value: 'N',
        check: matching(/^[1-9]\d{0,5}$/, '--ttl-seconds must be a whole number of seconds, 1 to 86400'),
        doc: 'lifetime of the hold, 1 to 86400 s (default HOLD_TTL_SECONDS, 900)',
      },
      'idempotency-key': IDEMPOTENCY_KEY_FLAG,
    },
    async run(f, { clients, baseUrl }) {
      const ttlSeconds = f['ttl-seconds'] === undefined ? undefined : Number(f['ttl-seconds']);
      const calendar = clients.client(CalendarService, baseUrl);
      const res = await calendar.placeHold({
        listingId: f.listing,
        checkIn: f['check-in'],
        checkOut: f['check-out'],
        ttlSeconds,
        requiresPayment: false,
        idempotencyKey: f['idempotency-key'],
      });
      return { hold_id: res.hold!.holdId };
    },
  }),

  'hold release': command({
    summary: 'releases a hold (idempotent: an expired or released hold answers released too)',
    flags: { hold: { value: 'HID', required: true, doc: 'the hold id, as printed by `psync hold place`' } },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(CalendarService, baseUrl).releaseHold({ holdId: f.hold });
      return { hold_id: res.holdId, released: res.released };
    },
  }),

  'booking confirm': command({
    summary: 'confirms a booking (from a live hold, or on free nights) and emits booking.confirmed; never reaches a payment provider',
    usage: '(--hold HID | --listing LID --check-in D --check-out D) --guest-id GID --guest-name NAME --party-size N --amount 123.45 --currency EUR [--idempotency-key KEY]',
    notes: [
      "With --hold the booking takes the hold's listing and nights (--listing, --check-in, --check-out, if given too, must",
      'match them) and the hold becomes the booking; without it the nights must be free.',
    ],
    flags: {
      hold: { value: 'HID', doc: 'a live hold to convert, as printed by `psync hold place`' },
      listing: { value: 'LID', requiredUnless: 'hold', doc: 'the listing id (not needed with --hold)' },
      'check-in': { value: 'D', requiredUnless: 'hold', doc: 'first night, YYYY-MM-DD (not needed with --hold)' },
      'check-out': { value: 'D', requiredUnless: 'hold', doc: 'departure day (exclusive), YYYY-MM-DD (not needed with --hold)' },
      'guest-id': { value: 'GID', required: true, doc: "the marketplace's guest id" },
      'guest-name': { value: 'NAME', required: true, doc: "the guest's name" },
      'party-size': { value: 'N', required: true, check: matching(/^[1-9]\d{0,2}$/, '--party-size must be a whole number of guests'), doc: 'number of guests' },
      amount: { value: '123.45', required: true, check: matching(/^\d+(\.\d+)?$/, '--amount must be a decimal amount such as 123.45'), doc: 'amount paid, a decimal' },
      currency: {
        value: 'EUR',
        required: true,
        check: matching(/^[A-Za-z]{3}$/, '--currency must be a three-letter currency code such as EUR'),
        doc: 'three-letter currency code',
      },
      'idempotency-key': IDEMPOTENCY_KEY_FLAG,
    },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(CalendarService, baseUrl).confirmBooking({
        holdId: f.hold,
        listingId: f.listing ?? '',
        checkIn: f['check-in'] ?? '',
        checkOut: f['check-out'] ?? '',
        guestId: f['guest-id'],
        guestName: f['guest-name'],
        partySize: Number(f['party-size']),
        amountPaid: { value: f.amount, currency: f.currency.toUpperCase() },
        requiresPayment: false,
        idempotencyKey: f['idempotency-key'],
      });
      return { booking_reference: res.booking!.bookingReference };
    },
  }),

  'booking cancel': command({
    summary: 'cancels a booking and emits booking.cancelled (guest: nights re-sellable; host: nights stay closed)',
    flags: {
      booking: { value: 'REF', required: true, doc: 'the booking reference' },
      'initiated-by': { value: 'guest|host', required: true, check: oneOf(INITIATORS, '--initiated-by must be guest or host'), doc: 'who cancelled' },
      'idempotency-key': IDEMPOTENCY_KEY_FLAG,
    },
    async run(f, { clients, baseUrl }) {
      const by = INITIATORS.value(f['initiated-by']);
      const res = await clients.client(CalendarService, baseUrl).cancelBooking({ bookingReference: f.booking, initiatedBy: by, idempotencyKey: f['idempotency-key'] });
      return { booking_reference: res.bookingReference, cancelled: res.cancelled };
    },
  }),

  'user erase': command({
    summary: 'erases a guest: scrubs their data at once and sends user.erased to every partner holding their records',
    flags: { 'guest-id': { value: 'GID', required: true, doc: "the marketplace's guest id" } },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(CalendarService, baseUrl).eraseGuest({ guestId: f['guest-id'] });
      return { erasure_id: res.erasureId };
    },
  }),

  'webhook rotate-secret': command({
    summary: 'mints a new webhook signing secret; the previous one signs X-Signature-Previous until previous_valid_until',
    flags: {
      workspace: WORKSPACE_FLAG,
      'overlap-seconds': {
        value: 'N',
        check: matching(/^\d+$/, '--overlap-seconds must be a whole number of seconds'),
        doc: 'how long the previous secret keeps signing, in seconds (default 86400)',
      },
    },
    async run(f, { clients, baseUrl }) {
      const overlapSeconds = f['overlap-seconds'] === undefined ? undefined : Number(f['overlap-seconds']);
      const res = await clients.client(NotificationsService, baseUrl).rotateSecret({ workspaceId: f.workspace, overlapSeconds });
      return { signing_secret: res.signingSecret, previous_valid_until: isoOrNull(res.previousValidUntil) };
    },
  }),

  'deliveries list': command({
    summary: "a workspace's webhook deliveries, newest first (at most 500)",
    columns: DELIVERY_COLUMNS,
    flags: {
      workspace: WORKSPACE_FLAG,
      state: {
        value: 'pending|delivered|abandoned',
        check: oneOf(DELIVERY_STATES, '--state must be pending, delivered or abandoned'),
        doc: 'only deliveries in this state',
      },
    },
    async run(f, { clients, baseUrl }) {
      const state = f.state === undefined ? undefined : DELIVERY_STATES.value(f.state);
      const res = await clients.client(NotificationsService, baseUrl).listDeliveries({ workspaceId: f.workspace, state });
      return { items: res.items.map(deliveryItem) };
    },
  }),

  'deliveries replay': command({
    summary: "sends a workspace's abandoned deliveries (one, or all) again with the same event_id and body",
    usage: '--workspace WID (--event EVENT_ID | --all-abandoned)',
    notes: [
      'Re-queued deliveries are pending again with a fresh retry schedule. Delivered and pending ones are left alone;',
      'an EVENT_ID the workspace has no delivery for fails. Nothing is sent while the endpoint is not active.',
    ],
    columns: DELIVERY_COLUMNS,
    flags: {
      workspace: WORKSPACE_FLAG,
      event: {
        value: 'EVENT_ID',
        check: matching(UUID, '--event must be an event_id (a UUID, as printed by `psync deliveries list`)'),
        doc: 'the event_id of one abandoned delivery, as printed by `psync deliveries list`',
      },
      'all-abandoned': { doc: 'every abandoned delivery of the workspace' },
    },
    async run(f, { clients, baseUrl }) {
      if ((f.event === undefined) === (f['all-abandoned'] === undefined)) throw new UsageError('give exactly one of --event EVENT_ID or --all-abandoned');
      const res = await clients.client(NotificationsService, baseUrl).replayDeliveries({
        workspaceId: f.workspace,
        selection: f.event !== undefined ? { case: 'eventId', value: f.event } : { case: 'allAbandoned', value: true },
      });
      return {
        replayed: res.items.length,
        items: res.items.map(deliveryItem),
        not_replayable: res.notReplayable,
        endpoint_status: ENDPOINT_STATUSES.nameOf(res.endpointStatus) ?? null,
      };
    },
  }),

  'deletion-requests list': command({
    summary: 'deletion requests (one per user.erased delivery), newest first, and their acknowledgement state',
    columns: ['event_id', 'workspace_id', 'state', 'booking_references', 'provider_ids', 'created_at', 'acknowledged_at', 'completed_at', 'escalated_at'],
    flags: {
      workspace: { value: 'WID', check: workspaceCheck, doc: "only this workspace's requests (a UUID)" },
      state: {
        value: 'open|acknowledged|escalated',
        check: oneOf(DELETION_STATES, '--state must be open, acknowledged or escalated'),
        doc: 'only requests in this state (escalated: unacknowledged too long)',
      },
    },
    async run(f, { clients, baseUrl }) {
      const state = f.state === undefined ? undefined : DELETION_STATES.value(f.state);
      const res = await clients.client(NotificationsService, baseUrl).listDeletionRequests({ workspaceId: f.workspace ?? '', state });
      return {
        items: res.items.map((r) => ({
          event_id: r.eventId,
          workspace_id: r.workspaceId,
          state: DELETION_STATES.nameOr(r.state, 'open'),
          booking_references: r.bookingReferences,
          provider_ids: r.providerIds,
          created_at: isoOrNull(r.createdAt),
          acknowledged_at: isoOrNull(r.acknowledgedAt),
          completed_at: isoOrNull(r.completedAt),
          escalated_at: isoOrNull(r.escalatedAt),
          test: r.test,
        })),
      };
    },
  }),
};

/** A delivery as the operator sees it (docs/contract-gaps.md, "deliveries list item"). */
function deliveryItem(d: Delivery): Record<string, unknown> {
  return {
    event_id: d.eventId,
    event_type: webhookEventTypeName(d.eventType),
    state: DELIVERY_STATES.nameOr(d.state, 'pending'),
    attempts: d.attempts,
    last_status: d.lastStatus ?? null,
    next_attempt_at: isoOrNull(d.nextAttemptAt),
  };
}
