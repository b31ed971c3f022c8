/**
 * Webhooks: the registered endpoint, a sandbox test event, the delivery log with every
 * attempt and a resend, and a receiver-check run. After a test event or a resend the
 * log is read again every few seconds until that delivery leaves `pending` (at most
 * `WATCH_READS` reads: each one counts toward the hourly quota like any other call),
 * and not after sign-out (session.ts).
 */
import { useEffect, useState } from 'preact/hooks';
import { isProblem } from '../../../packages/partner-sdk/src/errors';
import { webhookEndpointEventsValues } from '../../../packages/partner-sdk/src/generated/openapi';
import type { Delivery, TestEvent } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useAction, useLoad } from '../load';
import { href, type Route } from '../route';
import { Badge, ErrorNote, Loading, Section } from '../ui';
import { DeliveryLog, deliveryQuery } from './delivery-log';
import { ListingOptions, useListings } from './listings';
import { ReceiverChecks } from './receiver-checks';

export const WATCH_EVERY_MS = 2000;
export const WATCH_READS = 15;

function TestEventForm({ onSent }: { onSent: (d: Delivery) => void }) {
  const { api, session } = useConsole();
  const { loaded: listings, choices } = useListings();
  const action = useAction();

  function send(e: Event) {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const event: TestEvent = { event_type: String(form.get('event_type')) as TestEvent['event_type'], listing_id: String(form.get('listing_id') ?? '') };
    action.run(async () => onSent(await api((c) => c.triggerTestEvent(event))));
  }

  return (
    <form class="inline" onSubmit={send}>
      <label for="test-event-type">Event type</label>
      <select id="test-event-type" name="event_type">
        {webhookEndpointEventsValues.map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
      <label for="test-event-listing">Listing</label>
      <select id="test-event-listing" name="listing_id">
        <ListingOptions choices={choices} />
      </select>
      <button type="submit" disabled={action.busy || !session.token.sandbox || choices.length === 0}>
        Send test event
      </button>
      {choices.length === 0 && !listings.loading && <p class="help">A test event is about one of your listings: push a property first.</p>}
      <ErrorNote error={action.error} />
    </form>
  );
}

export function WebhooksPage({ route }: { route: Route }) {
  const { api, session } = useConsole();
  const endpoint = useLoad(
    () =>
      api((c) => c.getWebhookEndpoint()).catch((e: unknown) => {
        if (isProblem(e, 'webhook_endpoint_not_found')) return null;
        throw e;
      }),
    [],
  );
  const [watched, setWatched] = useState<string | undefined>();
  const [reads, setReads] = useState(0);
  const query = deliveryQuery(route);
  const log = useLoad(() => api((c) => c.listDeliveries(query)), [route.query.toString()]);

  // While a delivery just sent is pending, read the log again (bounded).
  const watchedState = log.data?.items.find((d) => d.event_id === watched)?.state;
  useEffect(() => {
    if (!watched || log.loading || reads >= WATCH_READS || (watchedState && watchedState !== 'pending')) return;
    // A wait of the session: sign-out cancels it even before this page unmounts.
    return session.later(WATCH_EVERY_MS, () => {
      setReads((n) => n + 1);
      log.reload();
    });
  }, [watched, watchedState, reads, log.loading, session]);

  // A delivery just made is on the first page of the unfiltered log.
  function watch(d: Delivery) {
    setWatched(d.event_id);
    setReads(0);
    if (route.query.toString()) window.location.hash = href(['webhooks']);
    else log.reload();
  }

  return (
    <>
      <h1>Webhooks</h1>
      <Section title="Endpoint">
        {endpoint.loading && <Loading what="the endpoint" />}
        <ErrorNote error={endpoint.error} />
        {endpoint.data === null && (
          <p>
            No endpoint registered: <code>PUT /v1/webhooks/endpoint</code> registers one.
          </p>
        )}
        {endpoint.data && (
          <dl class="summary" data-testid="endpoint">
            <dt>URL</dt>
            <dd>
              <code>{endpoint.data.url}</code>
            </dd>
            <dt>Events</dt>
            <dd>{endpoint.data.events.join(', ')}</dd>
            <dt>Status</dt>
            <dd>
              <Badge tone={endpoint.data.status === 'active' ? 'good' : 'warn'}>{endpoint.data.status}</Badge>
            </dd>
          </dl>
        )}
      </Section>
      <Section title="Send a test event">
        <p>
          A signed synthetic event with <code>"test": true</code>, delivered to the endpoint like a real one.
        </p>
        <TestEventForm onSent={watch} />
      </Section>
      <Section title="Deliveries">
        <DeliveryLog log={log} query={query} onResent={watch} watched={watched} />
      </Section>
      <Section title="Receiver checks">
        <ReceiverChecks />
      </Section>
    </>
  );
}
