/**
 * Requests: the workspace's request log (`GET /v1/requests`), newest first, filtered by
 * status and problem code; each row's `instance` is what to quote to support. The
 * filters live in the hash route, so a filtered view can be bookmarked within the session.
 */
import type { RecordedRequestListQuery } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useField } from '../field';
import { useLoad } from '../load';
import { href, type Route } from '../route';
import { ErrorNote, HeadRow, Loading, Time } from '../ui';

export function requestQuery(route: Route): RecordedRequestListQuery {
  const q: RecordedRequestListQuery = { limit: 50 };
  const status = route.query.get('status');
  const code = route.query.get('code');
  const after = route.query.get('after');
  if (status && /^\d{3}$/.test(status)) q.status = Number(status);
  if (code) q.code = code;
  if (after) q.after = after;
  return q;
}

function Filters({ query }: { query: RecordedRequestListQuery }) {
  const status = useField(query.status?.toString() ?? '');
  const code = useField(query.code ?? '');
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        window.location.hash = href(['requests'], { status: status.value.trim(), code: code.value.trim() });
      }}
    >
      <label for="filter-status">Status</label>
      <input id="filter-status" inputMode="numeric" pattern="[1-5][0-9]{2}" size={4} {...status} />
      <label for="filter-code">Code</label>
      <input id="filter-code" size={24} placeholder="validation_failed" {...code} />
      <button type="submit">Filter</button>
      <a href={href(['requests'])}>Clear filters</a>
    </form>
  );
}

export function RequestsPage({ route }: { route: Route }) {
  const { api } = useConsole();
  const query = requestQuery(route);
  const list = useLoad(() => api((c) => c.listRequests(query)), [route.query.toString()]);

  return (
    <>
      <h1>Requests</h1>
      <p>Your workspace's recent requests (14 days, metadata only: never a body, a token or a key). Quote a row's instance to support.</p>
      <Filters query={query} key={route.query.toString()} />
      {list.loading && <Loading what="requests" />}
      <ErrorNote error={list.error} />
      {list.data && list.data.items.length === 0 && <p>No request matches.</p>}
      {list.data && list.data.items.length > 0 && (
        <table class="requests">
          <caption>
            Requests{query.status ? `, status ${query.status}` : ''}
            {query.code ? `, code ${query.code}` : ''}
          </caption>
          <HeadRow cols={['Received', 'Request', 'Status', 'Code', 'Duration', 'Instance']} />
          <tbody>
            {list.data.items.map((r) => (
              <tr key={r.instance} data-instance={r.instance}>
                <td>
                  <Time at={r.received_at} />
                </td>
                <td>
                  <code>
                    {r.method} {r.route}
                  </code>
                  {Object.keys(r.path_params).length > 0 && (
                    <span class="muted">
                      {' '}
                      {Object.entries(r.path_params)
                        .map(([k, v]) => `${k}=${v}`)
                        .join(' ')}
                    </span>
                  )}
                  {r.errors.length > 0 && (
                    <ul class="violations">
                      {r.errors.map((v) => (
                        <li key={`${v.field}:${v.code}`}>
                          <code>{v.field}</code>: {v.code}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>{r.status}</td>
                <td>{r.code ?? ''}</td>
                <td>{r.duration_ms} ms</td>
                <td class="wrap">
                  <code>{r.instance}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav aria-label="Pages of requests" class="pager">
        {route.query.get('after') && <a href={href(['requests'], { status: route.query.get('status') ?? undefined, code: query.code })}>Newest</a>}
        {list.data?.next_cursor && (
          <a href={href(['requests'], { status: route.query.get('status') ?? undefined, code: query.code, after: list.data.next_cursor })}>Older requests</a>
        )}
      </nav>
    </>
  );
}
