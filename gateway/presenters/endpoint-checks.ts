/**
 * Receiver checks (POST /v1/sandbox/endpoint-checks, GET
 * /v1/sandbox/endpoint-checks/{id}; docs/partners/sandbox.md "Checking your receiver"):
 * notifications EndpointCheckRun → public JSON.
 */
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { EndpointCheckRun } from '../../gen/psync/notifications/v1/notifications_pb';

export interface EndpointCheckJson {
  name: string;
  expectation: string;
  /** What the receiver did; null until the check ran. */
  observed: string | null;
  /** Whether it did as expected; null until the check ran. */
  passed: boolean | null;
}

export interface EndpointCheckRunJson {
  id: string;
  status: string;
  url: string;
  started_at: string;
  finished_at: string | null;
  checks: EndpointCheckJson[];
}

export function presentEndpointCheckRun(run: EndpointCheckRun | undefined): EndpointCheckRunJson {
  if (!run) throw new Error('receiver check run missing from the answer');
  return {
    id: run.id,
    status: run.status,
    url: run.url,
    started_at: timestampDate(run.startedAt!).toISOString(),
    finished_at: run.finishedAt ? timestampDate(run.finishedAt).toISOString() : null,
    checks: run.checks.map((c) => ({ name: c.name, expectation: c.expectation, observed: c.observed ?? null, passed: c.passed ?? null })),
  };
}
