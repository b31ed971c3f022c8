/**
 * Who may call which internal RPC: the one allow-list of the internal API.
 *
 * Every caller of the internal Connect/gRPC port has exactly one role, proven by its
 * credential (internal-auth.ts). A role may call only the RPCs listed for it here;
 * anything not listed — including an RPC added to a `.proto` but forgotten here — is
 * refused with PERMISSION_DENIED. `grpc.health.v1.Health` needs no credential
 * (Kubernetes probes and the gateway's readiness check call it). gRPC server
 * reflection (reflection.ts) is open to every role but needs a credential: it shows
 * only the API's shape, yet a caller without one learns nothing at all.
 *
 * docs/security/internal-access.md publishes this table; test/kit/access-policy.test.ts
 * checks the document against it and that every RPC of every hosted service has an
 * entry, and test/platform/internal-auth-matrix.test.ts runs every RPC × every role ×
 * no credential against a running system.
 */

/** The caller roles. Each service is a role of its own (what it calls on the others). */
export const ROLES = ['gateway', 'identity', 'catalog', 'calendar', 'notifications', 'marketplace', 'operator'] as const;
export type Role = (typeof ROLES)[number];

/** The service roles: the processes of `main.ts` that host one service each. */
export const SERVICE_ROLES = ['identity', 'catalog', 'calendar', 'notifications'] as const satisfies readonly Role[];

/** Services whose RPCs need no credential at all. */
export const UNAUTHENTICATED_SERVICES: ReadonlySet<string> = new Set(['grpc.health.v1.Health']);

/** Every service's own role: they ask identity whether a presented marketplace credential is live. */
const ANY_SERVICE = SERVICE_ROLES;

/**
 * Fully-qualified service name → method name → roles allowed to call it.
 *
 * - gateway: exactly the RPCs the public contract's routes use (gateway/routes/).
 * - identity, catalog, calendar, notifications: what each calls on the others
 *   (catalog: a workspace's environment; calendar: listings; notifications: the
 *   listing a partner's test event is about, and the booking or erasure an event
 *   names, read back before a delivery is made; every service: AuthenticateClient, to
 *   verify a marketplace credential presented to it).
 * - marketplace: holds, bookings, availability, public listing reads, WatchEvents.
 * - operator: what `bin/psync` does (docs/operator-cli.md).
 * - every role: gRPC server reflection (grpcurl, buf curl; docs/marketplace.md).
 */
export const ACCESS_POLICY: Readonly<Record<string, Readonly<Record<string, readonly Role[]>>>> = {
  'grpc.reflection.v1.ServerReflection': {
    ServerReflectionInfo: ROLES,
  },
  'grpc.reflection.v1alpha.ServerReflection': {
    ServerReflectionInfo: ROLES,
  },
  'psync.admin.v1.AdminService': {
    Migrate: ['operator'],
  },
  'psync.identity.v1.IdentityService': {
    CreateWorkspace: ['operator'],
    GetWorkspace: ['catalog', 'operator'],
    IssueKey: ['operator'],
    RevokeKey: ['operator'],
    ExchangeToken: ['gateway'],
    Authorize: ['gateway'],
    IssueClient: ['operator'],
    RevokeClient: ['operator'],
    ListClients: ['operator'],
    AuthenticateClient: ANY_SERVICE,
    RecordRequests: ['gateway'],
    ListRequests: ['gateway', 'operator'],
    GetRequest: ['operator'],
  },
  'psync.catalog.v1.CatalogService': {
    UpsertProperty: ['gateway'],
    GetProperty: ['gateway', 'operator'],
    ListProperties: ['gateway'],
    CreateListing: ['operator'],
    GetListing: ['calendar', 'notifications'],
    ResolveListing: ['calendar', 'marketplace'],
    ListAmenities: ['marketplace', 'operator'],
    SearchPublicListings: ['marketplace'],
    GetPublicListing: ['marketplace'],
    GetPublicPhoto: ['marketplace'],
  },
  'psync.calendar.v1.CalendarService': {
    PutBlock: ['gateway'],
    DeleteBlock: ['gateway'],
    ListBlocks: ['gateway'],
    ListListingNights: ['gateway'],
    PlaceHold: ['marketplace', 'operator'],
    ReleaseHold: ['marketplace', 'operator'],
    ConfirmBooking: ['marketplace', 'operator'],
    CancelBooking: ['marketplace', 'operator'],
    GetBooking: ['marketplace', 'notifications', 'operator'],
    GetAvailability: ['marketplace'],
    WatchEvents: ['marketplace'],
    EraseGuest: ['operator'],
    GetErasure: ['notifications'],
  },
  'psync.notifications.v1.NotificationsService': {
    PutEndpoint: ['gateway'],
    GetEndpoint: ['gateway', 'operator'],
    RotateSecret: ['operator'],
    ListDeliveries: ['operator'],
    ReplayDeliveries: ['operator'],
    AcknowledgeDeletion: ['gateway'],
    ListDeletionRequests: ['operator'],
    TriggerTestEvent: ['gateway'],
    ListDeliveryLog: ['gateway'],
    GetDelivery: ['gateway', 'operator'],
    ResendDelivery: ['gateway'],
    ListEvents: ['gateway'],
    StartEndpointCheck: ['gateway'],
    GetEndpointCheck: ['gateway'],
  },
};

/** True when `role` may call `service`/`method` (default deny). */
export function isAllowed(role: Role, service: string, method: string): boolean {
  const roles = ACCESS_POLICY[service]?.[method];
  return roles !== undefined && roles.includes(role);
}

/** True when `name` is one of the roles. */
export function isRole(name: string): name is Role {
  return (ROLES as readonly string[]).includes(name);
}

/** One accepted internal-API credential: the caller's role and SHA-256 of its token. */
export interface AcceptedCaller {
  role: Role;
  /** Lower-case hex SHA-256 of the token's UTF-8 bytes. */
  sha256: string;
}
