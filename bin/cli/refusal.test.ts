import { Code, ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema, ErrorDetailSchema, ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { serviceRefusal } from './refusal';

const URL = 'http://127.0.0.1:8081';

describe("a service's refusal in words", () => {
  test('a conflict lists its nights from the ConflictDetail', () => {
    const conflict = (dates: string[]) =>
      new ConnectError(`${dates.length} night(s) already taken`, Code.FailedPrecondition, undefined, [
        { desc: ErrorDetailSchema, value: { reason: ErrorReason.CONFLICT } },
        { desc: ConflictDetailSchema, value: { dates } },
      ]);
    expect(serviceRefusal(conflict(['2027-03-01', '2027-03-02']), URL, 30000)).toBe('conflict: nights 2027-03-01, 2027-03-02 are already taken');
    expect(serviceRefusal(conflict(['2027-03-01']), URL, 30000)).toBe('conflict: night 2027-03-01 is already taken');
  });

  test('never a gRPC code name', () => {
    const cases: [Code, string, string][] = [
      [Code.NotFound, 'workspace not found', 'workspace not found'],
      [Code.NotFound, 'no such hold', 'not found: no such hold'],
      [Code.FailedPrecondition, 'the hold expired, was released or was already converted', 'refused: the hold expired, was released or was already converted'],
      [Code.InvalidArgument, 'invalid request (guest_id: required)', 'refused: invalid request (guest_id: required)'],
      [Code.AlreadyExists, 'endpoint exists', 'already exists: endpoint exists'],
      [Code.DeadlineExceeded, 'deadline', `the internal API at ${URL} did not answer within 30 s`],
      [Code.Internal, 'internal error (request id r1)', `the internal API at ${URL} failed: internal error (request id r1) (the system's log has the details)`],
    ];
    for (const [code, message, expected] of cases) {
      const line = serviceRefusal(new ConnectError(message, code), URL, 30000);
      expect(line).toBe(expected);
      expect(line).not.toContain(Code[code]);
    }
  });
});
