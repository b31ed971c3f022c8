/** The delivery log: each delivery, its state, every attempt (status, duration, error) and a resend. */
import type { Delivery, DeliveryList } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { type Loaded, useAction } from '../load';
import { Badge, ErrorNote, HeadRow, Loading, Time } from '../ui';

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

export function DeliveryLog({ log, onResent, watched }: { log: Loaded<DeliveryList>; onResent: (d: Delivery) => void; watched: string | undefined }) {
  const { api, session } = useConsole();
  const action = useAction();
  const resend = (eventId: string) => action.run(async () => onResent(await api((c) => c.resendDelivery(eventId))));

  return (
    <>
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
    </>
  );
}
