/** One property: the document as last accepted, its publishability and every photo's state. */
import { useConsole } from '../context';
import { useLoad } from '../load';
import { href } from '../route';
import { Badge, ErrorNote, HeadRow, Loading, Section, Time } from '../ui';
import { photoTone, Publishable } from './properties';

export function PropertyPage({ providerId }: { providerId: string }) {
  const { api } = useConsole();
  const got = useLoad(() => api((c) => c.getProperty(providerId)), [providerId]);
  const p = got.data;

  return (
    <>
      <h1>Property {providerId}</h1>
      <p>
        <a href={href(['properties'])}>All properties</a>
      </p>
      {got.loading && <Loading what="the property" />}
      <ErrorNote error={got.error} />
      {p && (
        <>
          <dl class="summary">
            <dt>Listing id</dt>
            <dd>{p.listing_id ? <a href={href(['calendar'], { listing: p.listing_id })}>{p.listing_id}</a> : 'none yet'}</dd>
            <dt>Publishable</dt>
            <dd>
              <Publishable p={p} />
            </dd>
            <dt>Missing</dt>
            <dd>{p.missing.length ? p.missing.join(', ') : 'nothing'}</dd>
            <dt>Unknown amenities</dt>
            <dd>{p.unknown_amenities.length ? p.unknown_amenities.join(', ') : 'none'}</dd>
            <dt>Last accepted</dt>
            <dd>
              <Time at={p.updated_at} />
            </dd>
          </dl>
          <Section title="Photos">
            {p.photos.length === 0 ? (
              <p>No photos.</p>
            ) : (
              <table>
                <HeadRow cols={['Position', 'URL', 'State', 'Reason']} />
                <tbody>
                  {p.photos.map((ph) => (
                    <tr key={`${ph.position}:${ph.url}`}>
                      <td>{ph.position}</td>
                      <td class="wrap">
                        <code>{ph.url}</code>
                      </td>
                      <td>
                        <Badge tone={photoTone(ph.state)}>{ph.state}</Badge>
                      </td>
                      <td>{ph.reason ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
          <Section title="As last accepted">
            <pre class="json" tabIndex={0}>
              {JSON.stringify(p.property, null, 2)}
            </pre>
          </Section>
        </>
      )}
    </>
  );
}
