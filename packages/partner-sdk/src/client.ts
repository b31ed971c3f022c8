/**
 * The Partner Synchronisation API client. One instance per API key:
 *
 *   const client = new PartnerClient({ baseUrl: 'https://api.example/v1', apiKey });
 *   await client.putProperty('villa-42', property);
 *
 * Typed by the OpenAPI document (src/generated/openapi.ts). Each contract operation
 * has a method returning its success body; `client.api` is the underlying
 * openapi-fetch client for any operation of the document (same authentication,
 * retries and errors). A failure throws (errors.ts): `client.api` calls return
 * `data` and never `error`.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi';
import type { RateLimitInfo } from './rate-limit';
import { TokenSource, type TokenInfo } from './token-source';
import { EventsPrunedError } from './errors';
import { type Clock, DEFAULT_RETRY_POLICY, type RetryPolicy, SYSTEM_CLOCK, Transport } from './transport';
import type {
  Block,
  BlockItem,
  BlockList,
  BlockListQuery,
  BlockPut,
  DeletionAcknowledgement,
  DeletionAcknowledgementState,
  Delivery,
  DeliveryList,
  DeliveryListQuery,
  EndpointCheckRun,
  EventList,
  EventListQuery,
  FeedEvent,
  ListingNights,
  ListingNightsQuery,
  Property,
  PropertyUpsert,
  PropertyListQuery,
  RecordedRequest,
  RecordedRequestList,
  RecordedRequestListQuery,
  StoredProperty,
  StoredPropertyList,
  TestEvent,
  Token,
  WebhookEndpoint,
  WebhookEndpointState,
} from './types';

export interface PartnerClientOptions {
  /** `{base_url}`: the API's address including `/v1`, e.g. `http://localhost:8080/v1`. */
  baseUrl: string;
  /** The long-lived API key; it is sent only to `POST /token`. */
  apiKey: string;
  /** Exchange a new token when less than this many seconds of the current one are left (at most a fifth of its lifetime). Default 60. */
  refreshMarginSeconds?: number;
  /** Retry limits (transport.ts). */
  retry?: Partial<RetryPolicy>;
  /** Headers added to every request, e.g. a `User-Agent` naming the integration. */
  headers?: Record<string, string>;
  /** The fetch to send with (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** Time source and timer (default: the system's). */
  clock?: Clock;
}

/** Something the API answered without a body where one was expected. */
function required<T>(data: T | undefined, what: string): T {
  if (data === undefined) throw new Error(`${what}: the answer had no body`);
  return data;
}

export class PartnerClient {
  /** The typed openapi-fetch client of every operation in the document. */
  readonly api: Client<paths>;
  private readonly transport: Transport;
  private readonly tokens: TokenSource;

  constructor(options: PartnerClientOptions) {
    const baseUrl = options.baseUrl.replace(/\/+$/, '');
    const clock = options.clock ?? SYSTEM_CLOCK;
    const fetchFn = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.tokens = new TokenSource(() => this.exchange(), clock, options.refreshMarginSeconds ?? 60);
    this.transport = new Transport(
      baseUrl,
      {
        apiKey: options.apiKey,
        accessToken: async () => (await this.tokens.current()).accessToken,
        refused: (token) => this.tokens.refused(token),
      },
      fetchFn,
      { ...DEFAULT_RETRY_POLICY, ...options.retry },
      clock,
      options.headers ?? {},
    );
    this.api = createClient<paths>({ baseUrl, fetch: (request) => this.transport.send(request) });
  }

  /** The contract quota as the last contract response stated it (undefined before the first). */
  get rateLimit(): RateLimitInfo | undefined {
    return this.transport.rateLimit;
  }

  /** The token endpoint's own ceiling as the last exchange stated it. */
  get tokenRateLimit(): RateLimitInfo | undefined {
    return this.transport.tokenRateLimit;
  }

  /** Token exchanges made so far. */
  get tokenExchanges(): number {
    return this.tokens.exchanges;
  }

  /** The access token in use: exchanged on first use and again shortly before it expires. */
  token(): Promise<TokenInfo> {
    return this.tokens.current();
  }

  private async exchange(): Promise<Token> {
    const { data } = await this.api.POST('/token');
    return required(data, 'POST /token');
  }

  /** `PUT /properties/{provider_id}`: creates or replaces the whole property. */
  async putProperty(providerId: string, property: Property): Promise<PropertyUpsert> {
    const { data } = await this.api.PUT('/properties/{provider_id}', { params: { path: { provider_id: providerId } }, body: property });
    return required(data, 'PUT /properties/{provider_id}');
  }

  /** `GET /properties/{provider_id}`: the property as last accepted, its publishability and each photo's state. */
  async getProperty(providerId: string): Promise<StoredProperty> {
    const { data } = await this.api.GET('/properties/{provider_id}', { params: { path: { provider_id: providerId } } });
    return required(data, 'GET /properties/{provider_id}');
  }

  /** `GET /properties`: one page, ordered by `provider_id`. */
  async listProperties(query: PropertyListQuery = {}): Promise<StoredPropertyList> {
    const { data } = await this.api.GET('/properties', { params: { query } });
    return required(data, 'GET /properties');
  }

  /** Every property, page after page (each page is one request of the quota). */
  async *properties(query: Omit<PropertyListQuery, 'page'> = {}): AsyncGenerator<StoredProperty> {
    for (let page = 1; ; page++) {
      const list = await this.listProperties({ ...query, page });
      yield* list.items;
      if (!list.has_more) return;
    }
  }

  /** `PUT /blocks/{external_uid}`: holds nights; a collision throws `ProblemError` `conflict` with `conflicts`. */
  async putBlock(externalUid: string, block: Block): Promise<BlockPut> {
    const { data } = await this.api.PUT('/blocks/{external_uid}', { params: { path: { external_uid: externalUid } }, body: block });
    return required(data, 'PUT /blocks/{external_uid}');
  }

  /** `DELETE /blocks/{external_uid}`: frees the nights the block still holds (nothing to do is no error). */
  async deleteBlock(externalUid: string): Promise<void> {
    await this.api.DELETE('/blocks/{external_uid}', { params: { path: { external_uid: externalUid } } });
  }

  /** `GET /blocks`: one page. */
  async listBlocks(query: BlockListQuery = {}): Promise<BlockList> {
    const { data } = await this.api.GET('/blocks', { params: { query } });
    return required(data, 'GET /blocks');
  }

  /** Every block matching `query`, page after page (each page is one request of the quota). */
  async *blocks(query: Omit<BlockListQuery, 'page'> = {}): AsyncGenerator<BlockItem> {
    for (let page = 1; ; page++) {
      const list = await this.listBlocks({ ...query, page });
      yield* list.items;
      if (!list.has_more) return;
    }
  }

  /** `GET /listings/{listing_id}/nights`: what holds each night of [`from`, `to`) of one of your listings (at most 366 nights). */
  async listListingNights(listingId: string, query: ListingNightsQuery): Promise<ListingNights> {
    const { data } = await this.api.GET('/listings/{listing_id}/nights', { params: { path: { listing_id: listingId }, query } });
    return required(data, 'GET /listings/{listing_id}/nights');
  }

  /** `PUT /webhooks/endpoint`: registers the endpoint; the challenge is answered during the call. */
  async putWebhookEndpoint(endpoint: WebhookEndpoint): Promise<WebhookEndpointState> {
    const { data } = await this.api.PUT('/webhooks/endpoint', { body: endpoint });
    return required(data, 'PUT /webhooks/endpoint');
  }

  /** `GET /webhooks/endpoint`: the registered endpoint (`url`, `events`, `status`), never the secret. */
  async getWebhookEndpoint(): Promise<WebhookEndpointState> {
    const { data } = await this.api.GET('/webhooks/endpoint');
    return required(data, 'GET /webhooks/endpoint');
  }

  /** `POST /deletion-requests/{event_id}/acknowledge`: call it once the records of a `user.erased` are deleted. */
  async acknowledgeDeletionRequest(eventId: string, body: DeletionAcknowledgement = {}): Promise<DeletionAcknowledgementState> {
    const { data } = await this.api.POST('/deletion-requests/{event_id}/acknowledge', { params: { path: { event_id: eventId } }, body });
    return required(data, 'POST /deletion-requests/{event_id}/acknowledge');
  }

  /**
   * `POST /sandbox/events` (sandbox only): queues a signed synthetic event (`"test": true`)
   * to the active endpoint. Never repeated by the client: each call queues a delivery.
   */
  async triggerTestEvent(event: TestEvent): Promise<Delivery> {
    const { data } = await this.api.POST('/sandbox/events', { body: event });
    return required(data, 'POST /sandbox/events');
  }

  /** `GET /webhooks/deliveries`: one page of the delivery log, newest first. */
  async listDeliveries(query: DeliveryListQuery = {}): Promise<DeliveryList> {
    const { data } = await this.api.GET('/webhooks/deliveries', { params: { query } });
    return required(data, 'GET /webhooks/deliveries');
  }

  /** Every delivery matching `query`, page after page (each page is one request of the quota). */
  async *deliveries(query: Omit<DeliveryListQuery, 'page'> = {}): AsyncGenerator<Delivery> {
    for (let page = 1; ; page++) {
      const list = await this.listDeliveries({ ...query, page });
      yield* list.items;
      if (!list.has_more) return;
    }
  }

  /** `GET /webhooks/deliveries/{event_id}`: one delivery and its newest attempts. */
  async getDelivery(eventId: string): Promise<Delivery> {
    const { data } = await this.api.GET('/webhooks/deliveries/{event_id}', { params: { path: { event_id: eventId } } });
    return required(data, 'GET /webhooks/deliveries/{event_id}');
  }

  /** `GET /events`: one page of the events feed (every event, delivered or not), oldest first. */
  async listEvents(query: EventListQuery = {}): Promise<EventList> {
    const { data } = await this.api.GET('/events', { params: { query } });
    return required(data, 'GET /events');
  }

  /**
   * Every event recorded after `after` (a `next_after` you kept; from the oldest kept
   * when absent), page after page, until the feed is caught up. Each yielded item
   * comes with the `next_after` to keep once you have handled it, so a reconciliation
   * can stop anywhere and resume there. Throws `EventsPrunedError` when events after
   * `after` were pruned by the retention (docs/partners/missed-events.md).
   */
  async *events(after?: string, limit?: number): AsyncGenerator<{ event: FeedEvent; nextAfter: string }> {
    let cursor = after;
    for (;;) {
      const page = await this.listEvents({ ...(cursor === undefined ? {} : { after: cursor }), ...(limit === undefined ? {} : { limit }) });
      if (page.after_expired) throw new EventsPrunedError(cursor!);
      // Within a page only the last item's position is answered: earlier items resume at the page's start.
      for (const [i, event] of page.items.entries()) yield { event, nextAfter: i === page.items.length - 1 ? page.next_after! : (cursor ?? '0') };
      if (!page.has_more || page.next_after === null) return;
      cursor = page.next_after;
    }
  }

  /** `POST /sandbox/endpoint-checks` (sandbox only): starts a receiver check run; answers it `running`. Never repeated by the client. */
  async startEndpointCheck(): Promise<EndpointCheckRun> {
    const { data } = await this.api.POST('/sandbox/endpoint-checks');
    return required(data, 'POST /sandbox/endpoint-checks');
  }

  /** `GET /sandbox/endpoint-checks/{id}`: a receiver check run as it stands. */
  async getEndpointCheck(id: string): Promise<EndpointCheckRun> {
    const { data } = await this.api.GET('/sandbox/endpoint-checks/{id}', { params: { path: { id } } });
    return required(data, 'GET /sandbox/endpoint-checks/{id}');
  }

  /** Starts a receiver check run and reads it every `pollMs` until it is no longer `running`. */
  async checkEndpoint(pollMs = 1000): Promise<EndpointCheckRun> {
    let run = await this.startEndpointCheck();
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      run = await this.getEndpointCheck(run.id);
    }
    return run;
  }

  /** `POST /webhooks/deliveries/{event_id}/resend`: sends the same delivery again. Never repeated by the client. */
  async resendDelivery(eventId: string): Promise<Delivery> {
    const { data } = await this.api.POST('/webhooks/deliveries/{event_id}/resend', { params: { path: { event_id: eventId } } });
    return required(data, 'POST /webhooks/deliveries/{event_id}/resend');
  }

  /** `GET /requests`: one page of the request log, newest first (find a request by its `instance`). */
  async listRequests(query: RecordedRequestListQuery = {}): Promise<RecordedRequestList> {
    const { data } = await this.api.GET('/requests', { params: { query } });
    return required(data, 'GET /requests');
  }

  /** Every recorded request matching `query`, page after page by cursor (each page is one request of the quota). */
  async *requests(query: Omit<RecordedRequestListQuery, 'after'> = {}): AsyncGenerator<RecordedRequest> {
    for (let after: string | undefined; ;) {
      const list = await this.listRequests({ ...query, after });
      yield* list.items;
      if (list.next_cursor === null) return;
      after = list.next_cursor;
    }
  }
}
