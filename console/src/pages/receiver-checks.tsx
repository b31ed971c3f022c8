/**
 * A receiver-check run (`POST /v1/sandbox/endpoint-checks`): the six checks of the
 * endpoint's signature handling, read again every `CHECK_EVERY_MS` until the run ends
 * (at most `CHECK_READS` reads), until sign-out at the latest. One run per workspace per minute.
 */
import { useState } from 'preact/hooks';
import type { EndpointCheckRun } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useAction } from '../load';
import { Badge, ErrorNote, HeadRow, Time } from '../ui';

export const CHECK_EVERY_MS = 1500;
export const CHECK_READS = 40;

export function ReceiverChecks() {
  const { api, session } = useConsole();
  const [run, setRun] = useState<EndpointCheckRun | undefined>();
  const action = useAction();

  const start = () =>
    action.run(async () => {
      let r = await api((c) => c.startEndpointCheck());
      setRun(r);
      for (let i = 0; r.status === 'running' && i < CHECK_READS; i++) {
        // The session's wait: sign-out ends it, and the run's polling with it.
        await session.sleep(CHECK_EVERY_MS);
        const id = r.id;
        r = await api((c) => c.getEndpointCheck(id));
        setRun(r);
      }
    });

  return (
    <>
      <p>Sends your endpoint valid, duplicate, wrongly signed, stale and altered deliveries and reports whether it accepted and refused each as it should.</p>
      <button type="button" onClick={start} disabled={action.busy || !session.token.sandbox}>
        {action.busy ? 'Checking…' : 'Run receiver checks'}
      </button>
      <ErrorNote error={action.error} />
      {run && (
        <div data-testid="check-run" data-status={run.status}>
          <p>
            Run <code>{run.id}</code> against <code>{run.url}</code>, started <Time at={run.started_at} />:{' '}
            <Badge tone={run.status === 'passed' ? 'good' : run.status === 'failed' ? 'bad' : 'info'}>{run.status}</Badge>
          </p>
          <table>
            <HeadRow cols={['Check', 'Expected', 'Observed', 'Result']} />
            <tbody>
              {run.checks.map((c) => (
                <tr key={c.name}>
                  <th scope="row">
                    <code>{c.name}</code>
                  </th>
                  <td>{c.expectation}</td>
                  <td>{c.observed ?? '—'}</td>
                  <td>{c.passed === null ? <Badge tone="info">pending</Badge> : c.passed ? <Badge tone="good">passed</Badge> : <Badge tone="bad">failed</Badge>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
