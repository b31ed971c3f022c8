/** Properties: every property pushed, its publishability, what is missing and its photos' states. */
import type { PhotoState, StoredProperty } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useLoad } from '../load';
import { href, type Route } from '../route';
import { Badge, ErrorNote, HeadRow, Loading, Time } from '../ui';

const PAGE_SIZE = 50;

export function photoTone(state: PhotoState['state']): 'good' | 'bad' | 'info' {
  return state === 'ready' ? 'good' : state === 'rejected' ? 'bad' : 'info';
}

/** Each photo by position with its state, and a rejection's reason. */
function PhotoStates({ photos }: { photos: PhotoState[] }) {
  if (photos.length === 0) return <span class="muted">no photos</span>;
  return (
    <ul class="photo-states">
      {photos.map((ph) => (
        <li key={ph.position}>
          <Badge tone={photoTone(ph.state)}>
            #{ph.position} {ph.state}
            {ph.reason ? `: ${ph.reason}` : ''}
          </Badge>
        </li>
      ))}
    </ul>
  );
}

export function Publishable({ p }: { p: StoredProperty }) {
  return p.publishable ? <Badge tone="good">publishable</Badge> : <Badge tone="warn">not publishable</Badge>;
}

export function PropertiesPage({ route }: { route: Route }) {
  const { api } = useConsole();
  const page = Math.max(1, Number(route.query.get('page') ?? '1') || 1);
  const list = useLoad(() => api((c) => c.listProperties({ page, page_size: PAGE_SIZE })), [page]);

  return (
    <>
      <h1>Properties</h1>
      <p>
        Each property as last accepted by <code>PUT /v1/properties/&#123;provider_id&#125;</code>, with what still keeps it from being published.
      </p>
      <p>
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
      </p>
      {list.loading && <Loading what="properties" />}
      <ErrorNote error={list.error} />
      {list.data && list.data.items.length === 0 && <p>No property pushed yet.</p>}
      {list.data && list.data.items.length > 0 && (
        <table>
          <caption>Properties, page {page}</caption>
          <HeadRow cols={['Provider id', 'Listing id', 'Publishable', 'Missing', 'Photos', 'Last accepted']} />
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.provider_id} data-provider-id={p.provider_id}>
                <th scope="row">
                  <a href={href(['properties', p.provider_id])}>{p.provider_id}</a>
                </th>
                <td>{p.listing_id ? <a href={href(['calendar'], { listing: p.listing_id })}>{p.listing_id}</a> : <span class="muted">none yet</span>}</td>
                <td>
                  <Publishable p={p} />
                </td>
                <td>{p.missing.length ? p.missing.join(', ') : <span class="muted">nothing</span>}</td>
                <td>
                  <PhotoStates photos={p.photos} />
                </td>
                <td>
                  <Time at={p.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav aria-label="Pages of properties" class="pager">
        {page > 1 && <a href={href(['properties'], { page: String(page - 1) })}>Previous page</a>}
        {list.data?.has_more && <a href={href(['properties'], { page: String(page + 1) })}>Next page</a>}
      </nav>
    </>
  );
}
