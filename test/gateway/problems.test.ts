/**
 * Problem documents (RFC 9457) and the mapping of internal Connect errors to public
 * codes (proto/psync/common/v1/errors.proto): what a partner sees for each failure.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema, ErrorDetailSchema, ErrorReason, RetryDetailSchema, ValidationDetailSchema } from '../../gen/psync/common/v1/errors_pb';
import { createLogger } from '../../services/kit/base';
import { problemFromConnectError } from '../../gateway/connect-errors';
import { toProblem } from '../../gateway/error-mapper';
import { PROBLEM_CODES, problemDocument, ProblemError, problemType, ProblemCode } from '../../gateway/problems';
import { firstLogEvent } from '../support/log-events';

const DOCS = 'https://docs.partner-sync.example/v1';
const REQUEST_ID = '0b5c2f8e-7d1a-4e53-9b61-3f0c8a2d4e10';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'debug', name: 'test' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

function connectError(code: Code, reason?: ErrorReason, extra: ConstructorParameters<typeof ConnectError>[3] = []): ConnectError {
  const details = [...(reason === undefined ? [] : [{ desc: ErrorDetailSchema, value: { reason } }]), ...(extra ?? [])];
  // Through the wire format, as the gateway receives them.
  const sent = new ConnectError('internal text with secrets pst_abc.def', code, undefined, details);
  const received = new ConnectError(sent.rawMessage, sent.code);
  received.details = sent.details.map((d) => {
    if (!('desc' in d)) return d;
    return { type: d.desc.typeName, value: toBinary(d.desc, create(d.desc, d.value)) };
  });
  return received;
}

describe('problem documents', () => {
  test.each(Object.keys(PROBLEM_CODES) as ProblemCode[])('%s has the RFC 9457 shape', (code) => {
    const doc = problemDocument(new ProblemError(code), DOCS, REQUEST_ID);
    expect(doc).toMatchObject({
      type: `${DOCS}/errors/${code.replace(/_/g, '-')}`,
      title: expect.any(String),
      status: PROBLEM_CODES[code].status,
      detail: expect.any(String),
      instance: `urn:psync:request:${REQUEST_ID}`,
      code,
    });
    expect(doc.instance).toMatch(/^urn:psync:request:[0-9a-f-]{36}$/);
  });

  test('statuses are the published ones', () => {
    const statuses = Object.fromEntries(Object.entries(PROBLEM_CODES).map(([c, v]) => [c, v.status]));
    expect(statuses).toEqual({
      validation_failed: 400,
      unauthorized: 401,
      workspace_scope_mismatch: 403,
      property_not_found: 404,
      deletion_request_not_found: 404,
      delivery_not_found: 404,
      endpoint_check_not_found: 404,
      webhook_endpoint_not_found: 404,
      not_found: 404,
      method_not_allowed: 405,
      conflict: 409,
      webhook_endpoint_not_active: 409,
      delivery_not_resendable: 409,
      rate_limited: 429,
      internal_error: 500,
      not_enabled: 501,
      service_unavailable: 503,
    });
  });

  test('errors[] only on validation_failed, conflicts[] only on conflict', () => {
    const v = problemDocument(new ProblemError('validation_failed', { errors: [{ field: 'name', code: 'required' }] }), DOCS, REQUEST_ID);
    expect(v.errors).toEqual([{ field: 'name', code: 'required' }]);
    expect(v).not.toHaveProperty('conflicts');
    const c = problemDocument(new ProblemError('conflict', { conflicts: ['2027-01-01', '2027-01-02'] }), DOCS, REQUEST_ID);
    expect(c.conflicts).toEqual(['2027-01-01', '2027-01-02']);
    expect(c).not.toHaveProperty('errors');
    expect(problemDocument(new ProblemError('not_found'), DOCS, REQUEST_ID)).not.toHaveProperty('errors');
  });

  test('a trailing slash on DOCS_URL does not double', () => {
    expect(problemType(`${DOCS}/`, 'rate_limited')).toBe(`${DOCS}/errors/rate-limited`);
  });
});

describe('internal errors → public codes', () => {
  test.each<[string, ConnectError, ProblemCode]>([
    ['Unavailable', connectError(Code.Unavailable), 'service_unavailable'],
    ['DeadlineExceeded', connectError(Code.DeadlineExceeded), 'service_unavailable'],
    ['Unavailable + SERVICE_UNAVAILABLE', connectError(Code.Unavailable, ErrorReason.SERVICE_UNAVAILABLE), 'service_unavailable'],
    ['Unavailable + TOKEN_ISSUER_NOT_CONFIGURED', connectError(Code.Unavailable, ErrorReason.TOKEN_ISSUER_NOT_CONFIGURED), 'service_unavailable'],
    ['Unimplemented (RPC not landed yet)', connectError(Code.Unimplemented), 'not_enabled'],
    ['Unimplemented + NOT_ENABLED', connectError(Code.Unimplemented, ErrorReason.NOT_ENABLED), 'not_enabled'],
    ['NotFound + PROPERTY_NOT_FOUND', connectError(Code.NotFound, ErrorReason.PROPERTY_NOT_FOUND), 'property_not_found'],
    ['NotFound + LISTING_NOT_FOUND', connectError(Code.NotFound, ErrorReason.LISTING_NOT_FOUND), 'property_not_found'],
    ['NotFound + DELETION_REQUEST_NOT_FOUND', connectError(Code.NotFound, ErrorReason.DELETION_REQUEST_NOT_FOUND), 'deletion_request_not_found'],
    ['NotFound + DELIVERY_NOT_FOUND', connectError(Code.NotFound, ErrorReason.DELIVERY_NOT_FOUND), 'delivery_not_found'],
    ['NotFound + ENDPOINT_NOT_FOUND', connectError(Code.NotFound, ErrorReason.ENDPOINT_NOT_FOUND), 'webhook_endpoint_not_found'],
    ['FailedPrecondition + WEBHOOK_ENDPOINT_NOT_ACTIVE', connectError(Code.FailedPrecondition, ErrorReason.WEBHOOK_ENDPOINT_NOT_ACTIVE), 'webhook_endpoint_not_active'],
    ['FailedPrecondition + DELIVERY_NOT_RESENDABLE', connectError(Code.FailedPrecondition, ErrorReason.DELIVERY_NOT_RESENDABLE), 'delivery_not_resendable'],
    ['PermissionDenied + WORKSPACE_SCOPE_MISMATCH', connectError(Code.PermissionDenied, ErrorReason.WORKSPACE_SCOPE_MISMATCH), 'workspace_scope_mismatch'],
    ['Unauthenticated', connectError(Code.Unauthenticated, ErrorReason.UNAUTHORIZED), 'unauthorized'],
  ])('%s', (_name, err, code) => {
    expect(problemFromConnectError(err)?.code).toBe(code);
  });

  test('a socket error wrapped under another code is still 503', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(problemFromConnectError(new ConnectError('wrapped', Code.Internal, undefined, undefined, refused))?.code).toBe('service_unavailable');
  });

  test('InvalidArgument with a ValidationDetail → 400 with its violations', () => {
    const err = connectError(Code.InvalidArgument, ErrorReason.VALIDATION_FAILED, [
      {
        desc: ValidationDetailSchema,
        value: {
          violations: [
            { field: 'url', code: 'invalid' },
            { field: 'x', code: 'bogus' },
          ],
        },
      },
    ]);
    const p = problemFromConnectError(err)!;
    expect(p.code).toBe('validation_failed');
    expect(p.errors).toEqual([
      { field: 'url', code: 'invalid' },
      { field: 'x', code: 'invalid' },
    ]);
  });

  test('FailedPrecondition + CONFLICT → 409 with every date', () => {
    const dates = Array.from({ length: 40 }, (_, i) => `2027-01-${String((i % 28) + 1).padStart(2, '0')}`);
    const err = connectError(Code.FailedPrecondition, ErrorReason.CONFLICT, [{ desc: ConflictDetailSchema, value: { dates } }]);
    const p = problemFromConnectError(err)!;
    expect(p.code).toBe('conflict');
    expect(p.conflicts).toEqual(dates);
  });

  test('ResourceExhausted + RetryDetail → 429 with Retry-After', () => {
    const err = connectError(Code.ResourceExhausted, ErrorReason.RATE_LIMITED, [{ desc: RetryDetailSchema, value: { retryAfterSeconds: 17 } }]);
    const p = problemFromConnectError(err)!;
    expect(p.code).toBe('rate_limited');
    expect(p.headers['Retry-After']).toBe('17');
  });

  test.each<[string, ConnectError]>([
    ['Internal', connectError(Code.Internal)],
    ['Unknown', connectError(Code.Unknown)],
    ['NotFound with an operator-only reason', connectError(Code.NotFound, ErrorReason.KEY_NOT_FOUND)],
    ['FailedPrecondition without CONFLICT', connectError(Code.FailedPrecondition, ErrorReason.HOLD_NOT_LIVE)],
  ])('%s has no public meaning (→ 500)', (_name, err) => {
    expect(problemFromConnectError(err)).toBeUndefined();
  });
});

describe('toProblem: what is answered and what is logged', () => {
  const state = { requestId: REQUEST_ID, startedAt: 0, route: 'PUT /v1/blocks/:external_uid' };

  test('an unexpected error is a generic 500; the cause goes to the log with the instance', () => {
    const { log, lines } = capture();
    const p = toProblem(new TypeError('boom: cannot read property of undefined (pst_secret.token)'), log, state);
    expect(p.code).toBe('internal_error');
    const doc = problemDocument(p, DOCS, REQUEST_ID);
    expect(JSON.stringify(doc)).not.toMatch(/boom|TypeError|pst_/);
    const line = firstLogEvent(lines, 'http.request.failed')!;
    expect(line).toBeDefined();
    expect(line.instance).toBe(`urn:psync:request:${REQUEST_ID}`);
    expect(JSON.stringify(line)).toContain('boom');
    expect(JSON.stringify(line)).not.toContain('pst_secret.token');
  });

  test('a ProblemError keeps its message', () => {
    const { log } = capture();
    const p = toProblem(new ProblemError('not_found'), log, state);
    expect(p.message).toBe(PROBLEM_CODES.not_found.detail);
  });

  test('a backend that refuses connections is 503, logged as a warning', () => {
    const { log, lines } = capture();
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(toProblem(refused, log, state).code).toBe('service_unavailable');
    expect(toProblem(connectError(Code.Unavailable), log, state).code).toBe('service_unavailable');
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2);
  });

  test('the internal message of a mapped error never reaches the document', () => {
    const { log } = capture();
    const p = toProblem(connectError(Code.NotFound, ErrorReason.PROPERTY_NOT_FOUND), log, state);
    expect(JSON.stringify(problemDocument(p, DOCS, REQUEST_ID))).not.toContain('internal text');
  });
});
