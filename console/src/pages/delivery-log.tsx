/**
 * The delivery log (`GET /v1/webhooks/deliveries`, newest first, 20 a page): each
 * delivery, its state, every attempt (status, duration, outcome) and a resend; filtered
 * by state and event type, both kept in the hash route.
 */
import { webhookEndpointEventsValues } from '../../../packages/partner-sdk/src/generated/openapi';
import type { Delivery, DeliveryList, DeliveryListQuery } from '../../../packages/partner-sdk/src/types';
import { href, type Route } from '../route';
import { useConsole } from '../context';
import { type Field, useField } from '../field';
import { type Loaded, useAction } from '../load';
import { Badge, ErrorNote, HeadRow, Loading, Time } from '../ui';

const PAGE_SIZE = 20;
const STATES = ['pending', 'delivered', 'abandoned'] as const;
/** The event types a partner subscribes to, as the API document lists them. */
const EVENT_TYPES = webhookEndpointEventsValues;

export function deliveryQuery(route: Route): DeliveryListQuery {
  const q: DeliveryListQuery = { page_size: PAGE_SIZE, page: Math.max(1, Number(route.query.get('page') ?? '1') || 1) };
  const state = STATES.find((s) => s === route.query.get('state'));
  const type = EVENT_TYPES.find((t) => t === route.query.get('event_type'));
  if (state) q.state = state;
  if (type) q.event_type = type;
  return q;
}

/** A filter's choice: "any", or one of `values`. */
function AnyOf({ id, field, values }: { id: string; field: Field; values: readonly string[] }) {
  return (
    <select id={id} {...field}>
      <option value="">any</option>
      {values.map((v) => (
        <option key={v} value={v}>
          {v}
        </option>
      ))}
    </select>
  );
}

function Filters({ query }: { query: DeliveryListQuery }) {
  const state = useField(query.state ?? '');
  const type = useField(query.event_type ?? '');
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        window.location.hash = href(['webhooks'], { state: state.value, event_type: type.value });
      }}
    >
      <label for="delivery-state">Deliveries in state</label>
      <AnyOf id="delivery-state" field={state} values={STATES} />
      <label for="delivery-type">Deliveries of type</label>
      <AnyOf id="delivery-type" field={type} values={EVENT_TYPES} />
      <button type="submit" class="secondary">
        Filter deliveries
      </button>
    </form>
  );
}

function stateTone(state: Delivery['state']): 'good' | 'bad' | 'info' {
  return state === 'delivered' ? 'good' : state === 'abandoned' ? 'bad' : 'info';
}

function Attempts({ d }: { d: Delivery }) {
  if (d.attempts.length === 0) return <p class="muted">No attempt yet.</p>;
  return (
    <table class="attempts">
      <caption>
        Attempts of {d.event_id} ({d.attempts_total} in all{d.attempts_total > d.attempts.length ? `, the newest ${d.attempts.length} shown` : ''})
      </caption>
      <HeadRow cols={['Attempted', 'Status', 'Duration', 'Outcome', 'Next attempt']} />
      <tbody>
        {d.attempts.map((a) => (
          <tr key={a.attempted_at}>
            <td>
              <Time at={a.attempted_at} />
            </td>
            <td>{a.response_status ?? <span class="muted">no answer</span>}</td>
            <td>{a.latency_ms === null ? '—' : `${a.latency_ms} ms`}</td>
            <td>{a.outcome === 'delivered' ? <Badge tone="good">delivered</Badge> : <Badge tone="bad">{a.outcome}</Badge>}</td>
            <td>
              <Time at={a.next_attempt_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DeliveryLog({
  log,
  query,
  onResent,
  watched,
}: {
  log: Loaded<DeliveryList>;
  query: DeliveryListQuery;
  onResent: (d: Delivery) => void;
  watched: string | undefined;
}) {
  const page = query.page ?? 1;
  const at = (p: number) => href(['webhooks'], { state: query.state, event_type: query.event_type, page: p > 1 ? String(p) : undefined });
  const { api, session } = useConsole();
  const action = useAction();
  const resend = (eventId: string) => action.run(async () => onResent(await api((c) => c.resendDelivery(eventId))));

  return (
    <>
      <Filters query={query} key={`${query.state ?? ''}:${query.event_type ?? ''}`} />
      <p>
        <button type="button" class="secondary" onClick={log.reload}>
          Refresh deliveries
        </button>
      </p>
      <ErrorNote error={action.error} />
      {log.loading && !log.data && <Loading what="deliveries" />}
      <ErrorNote error={log.error} />
      {log.data && log.data.items.length === 0 && <p>No delivery yet.</p>}
      {log.data && log.data.items.length > 0 && (
        <ul class="deliveries" aria-live="polite">
          {log.data.items.map((d) => (
            <li key={d.event_id} data-event-id={d.event_id} data-state={d.state} data-test={String(d.test)}>
              <details open={d.event_id === watched}>
                <summary>
                  <code>{d.event_type}</code> <Badge tone={stateTone(d.state)}>{d.state}</Badge> {d.test && <Badge tone="info">test</Badge>}{' '}
                  <span class="muted">
                    {d.event_id} · queued <Time at={d.queued_at} /> · {d.attempts_total} attempt{d.attempts_total === 1 ? '' : 's'}
                  </span>
                </summary>
                <Attempts d={d} />
                {d.next_attempt_at && (
                  <p>
                    Next attempt: <Time at={d.next_attempt_at} />
                  </p>
                )}
                <button type="button" class="secondary" disabled={!session.token.sandbox} onClick={() => resend(d.event_id)}>
                  Resend {d.event_id}
                </button>
              </details>
            </li>
          ))}
        </ul>
      )}
      <nav aria-label="Pages of deliveries" class="pager">
        {page > 1 && <a href={at(page - 1)}>Newer deliveries</a>}
        {log.data?.has_more && <a href={at(page + 1)}>Older deliveries</a>}
      </nav>
    </>
  );
}
