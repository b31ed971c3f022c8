/**
 * Overview: the workspace, its environment, the quota left and a summary of what the
 * marketplace holds (two reads: the first page of properties and the endpoint).
 */
import { isProblem } from '../../../packages/partner-sdk/src/errors';
import { useConsole } from '../context';
import { useLoad } from '../load';
import { href } from '../route';
import { Badge, ErrorNote, Loading, Section } from '../ui';

export function OverviewPage() {
  const { session, api } = useConsole();
  const summary = useLoad(async () => {
    const properties = await api((c) => c.listProperties({ page_size: 200 }));
    const endpoint = await api((c) => c.getWebhookEndpoint()).catch((e: unknown) => {
      if (isProblem(e, 'webhook_endpoint_not_found')) return undefined;
      throw e;
    });
    return { properties, endpoint, rate: session.client.rateLimit };
  }, [session]);
  const token = session.token;

  return (
    <>
      <h1>Overview</h1>
      <dl class="summary">
        <dt>Workspace id</dt>
        <dd>
          <code>{token.workspaceId}</code>
        </dd>
        <dt>Environment</dt>
        <dd>{token.sandbox ? 'Sandbox: the whole contract is live, deliveries carry test data' : 'Production: every call answers 501 not_enabled'}</dd>
        <dt>Requests left this hour</dt>
        <dd data-testid="overview-rate-limit">
          {summary.data?.rate ? `${summary.data.rate.remaining} of ${summary.data.rate.limit} (window resets in ${summary.data.rate.resetSeconds} s)` : '—'}
        </dd>
      </dl>
      {summary.loading && <Loading what="the summary" />}
      <ErrorNote error={summary.error} />
      {summary.data && (
        <>
          <Section title="Properties">
            <p>
              {summary.data.properties.items.length}
              {summary.data.properties.has_more ? '+' : ''} {summary.data.properties.items.length === 1 ? 'property' : 'properties'},{' '}
              {summary.data.properties.items.filter((p) => p.publishable).length} publishable. <a href={href(['properties'])}>See them</a>
            </p>
          </Section>
          <Section title="Webhook endpoint">
            {summary.data.endpoint ? (
              <p>
                <code>{summary.data.endpoint.url}</code> <Badge tone={summary.data.endpoint.status === 'active' ? 'good' : 'warn'}>{summary.data.endpoint.status}</Badge>{' '}
                <a href={href(['webhooks'])}>Deliveries</a>
              </p>
            ) : (
              <p>
                No endpoint registered yet: <code>PUT /v1/webhooks/endpoint</code> registers one (the Quickstart in the README shows how).
              </p>
            )}
          </Section>
        </>
      )}
    </>
  );
}
