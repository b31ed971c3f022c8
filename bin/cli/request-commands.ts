/**
 * `psync request show|list`: the request log of contract requests (docs/operations.md
 * "Request log"), in any environment. `show` finds one request by the `instance` a
 * partner quotes (`urn:psync:request:<uuid>`, or the bare uuid of `X-Request-Id`);
 * `list` shows a workspace's, newest first. Bodies, query values, tokens and keys are
 * never recorded, so never shown.
 */
import { IdentityService, RecordedRequestSchema, type RecordedRequest } from '../../gen/psync/identity/v1/identity_pb';
import { UUID_PATTERN } from '../../services/kit/base';
import { command, type Command } from './registry';
import { presentMessage, UUID } from './present';

/** The `instance` of a problem document, or the bare request id. */
const INSTANCE = new RegExp(`^(?:urn:psync:request:)?(${UUID_PATTERN.source.replace(/^\^|\$$/g, '')})$`, 'i');
const WORKSPACE_ERROR = '--workspace must be a workspace id (a UUID, as printed by `psync workspace create`)';

/** A recorded request as the operator sees it: its `instance` first, then the record. */
function requestItem(r: RecordedRequest): Record<string, unknown> {
  return { instance: `urn:psync:request:${r.requestId}`, ...presentMessage(RecordedRequestSchema, r) };
}

export const requestCommands: Record<string, Command> = {
  'request show': command({
    summary: 'one recorded contract request by the instance a partner quotes: route, path ids, status, code, errors, duration',
    usage: '(INSTANCE | --instance INSTANCE)',
    positional: 'instance',
    notes: ["Not found: never recorded (a 401 has no workspace), pruned (after 14 days, or beyond 10,000 per workspace), or not this system's."],
    flags: {
      instance: {
        value: 'INSTANCE',
        required: true,
        check: (v) => (INSTANCE.test(v) ? undefined : 'the instance must be urn:psync:request:<uuid> (as in a problem document) or the bare uuid of X-Request-Id'),
        doc: "the problem document's instance (urn:psync:request:<uuid>) or the request's X-Request-Id",
      },
    },
    async run(f, { clients, baseUrl }) {
      const requestId = INSTANCE.exec(f.instance)![1]!.toLowerCase();
      const res = await clients.client(IdentityService, baseUrl).getRequest({ requestId });
      return requestItem(res.request!);
    },
  }),

  'request list': command({
    summary: 'a workspace\'s recorded contract requests, newest first: {"items":[…],"next_cursor"}',
    columns: ['instance', 'received_at', 'method', 'route', 'status', 'code', 'duration_ms'],
    flags: {
      workspace: {
        value: 'WID',
        required: true,
        check: (v) => (UUID.test(v) ? undefined : WORKSPACE_ERROR),
        doc: 'the workspace id (a UUID, as printed by `psync workspace create`)',
      },
      status: {
        value: 'STATUS',
        check: (v) => (/^[1-5]\d\d$/.test(v) ? undefined : '--status must be an HTTP status, 100 to 599'),
        doc: 'only requests answered with this HTTP status',
      },
      code: {
        value: 'CODE',
        check: (v) => (/^[a-z][a-z_]{0,63}$/.test(v) ? undefined : '--code must be a problem code such as validation_failed'),
        doc: 'only requests answered with this problem code (validation_failed, not_enabled …)',
      },
      limit: {
        value: 'N',
        check: (v) => (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 200 ? undefined : '--limit must be 1 to 200'),
        doc: 'at most this many (default 50)',
      },
      after: {
        value: 'CURSOR',
        check: (v) => (/^[A-Za-z0-9_-]{32}$/.test(v) ? undefined : '--after must be a next_cursor printed by a previous `psync request list`'),
        doc: 'the next page: the next_cursor of the previous one',
      },
    },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).listRequests({
        workspaceId: f.workspace,
        status: f.status === undefined ? undefined : Number(f.status),
        code: f.code,
        limit: f.limit === undefined ? 50 : Number(f.limit),
        after: f.after,
      });
      return { items: res.requests.map(requestItem), next_cursor: res.nextCursor ?? null };
    },
  }),
};
