/**
 * Events: the reconciliation feed (`GET /v1/events`), every event recorded for the
 * workspace in order, with the cursor to resume from. The cursor shown is the one an
 * integration stores after processing a page (`next_after`).
 */
import { useConsole } from '../context';
import { useField } from '../field';
import { useLoad } from '../load';
import { href, type Route } from '../route';
import { ErrorNote, Loading, Time } from '../ui';

function CursorForm({ after }: { after: string | undefined }) {
  const cursor = useField(after ?? '');
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        window.location.hash = href(['events'], { after: cursor.value.trim() });
      }}
    >
      <label for="events-after">Read after cursor</label>
      <input id="events-after" inputMode="numeric" pattern="0|[1-9][0-9]{0,17}" size={20} placeholder="from the oldest kept" {...cursor} />
      <button type="submit">Read</button>
      <a href={href(['events'])}>From the oldest</a>
    </form>
  );
}

export function EventsPage({ route }: { route: Route }) {
  const { api } = useConsole();
  const after = route.query.get('after') ?? undefined;
  const page = useLoad(() => api((c) => c.listEvents({ ...(after ? { after } : {}), limit: 50 })), [after]);

  return (
    <>
      <h1>Events</h1>
      <p>Every event recorded for this workspace, delivered or not, in order: read it after downtime to reconcile (docs/partners/missed-events.md in the repository).</p>
      <CursorForm after={after} key={after ?? ''} />
      {page.loading && <Loading what="events" />}
      <ErrorNote error={page.error} />
      {page.data && (
        <>
          {page.data.after_expired && (
            <p class="note warn" role="status">
              Events after cursor {after} were pruned by the feed's retention before they were read: reconcile from your own records, then read from the oldest kept.
            </p>
          )}
          <p data-testid="events-cursor">
            Cursor after this page: <code>{page.data.next_after ?? 'none yet'}</code>
            {page.data.has_more ? ' (more events follow)' : ' (you are up to date)'}
          </p>
          {page.data.items.length === 0 ? (
            <p>No event after this cursor.</p>
          ) : (
            <ol class="events">
              {page.data.items.map((ev) => (
                <li key={ev.event_id} data-event-id={ev.event_id}>
                  <details>
                    <summary>
                      <code>{ev.event_type}</code> <Time at={ev.occurred_at} /> <span class="muted">{ev.event_id}</span>
                    </summary>
                    <pre class="json" tabIndex={0}>
                      {JSON.stringify(ev, null, 2)}
                    </pre>
                  </details>
                </li>
              ))}
            </ol>
          )}
          {page.data.has_more && page.data.next_after && (
            <p>
              <a href={href(['events'], { after: page.data.next_after })}>Next page</a>
            </p>
          )}
        </>
      )}
    </>
  );
}
