/**
 * Receiver checks (POST /v1/sandbox/endpoint-checks, GET
 * /v1/sandbox/endpoint-checks/{id}; docs/partners/sandbox.md "Checking your receiver"):
 * notifications EndpointCheckRun → public JSON.
 */
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { EndpointCheckRun } from '../../gen/psync/notifications/v1/notifications_pb';
import { ENDPOINT_CHECK_NAMES, ENDPOINT_CHECK_RUN_STATUSES, type EndpointCheckRunJson } from '../contract/sandbox';
import { publicName } from '../public-enums';

export function presentEndpointCheckRun(run: EndpointCheckRun | undefined): EndpointCheckRunJson {
  if (!run) throw new Error('receiver check run missing from the answer');
  return {
    id: run.id,
    status: publicName(ENDPOINT_CHECK_RUN_STATUSES, run.status, 'receiver check run status'),
    url: run.url,
    started_at: timestampDate(run.startedAt!).toISOString(),
    finished_at: run.finishedAt ? timestampDate(run.finishedAt).toISOString() : null,
    checks: run.checks.map((c) => ({
      name: publicName(ENDPOINT_CHECK_NAMES, c.name, 'receiver check name'),
      expectation: c.expectation,
      observed: c.observed ?? null,
      passed: c.passed ?? null,
    })),
  };
}
