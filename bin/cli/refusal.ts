/**
 * A service's refusal of a psync call as one human phrase (docs/operator-cli.md
 * "Errors"): never a gRPC code name.
 */
import { Code, type ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema } from '../../gen/psync/common/v1/errors_pb';

/**
 * What the service said, in words: a calendar conflict lists its nights (from the
 * ConflictDetail), other refusals say what kind they are, never a gRPC code name.
 */
export function serviceRefusal(err: ConnectError, baseUrl: string, timeoutMs: number): string {
  const nights = err.findDetails(ConflictDetailSchema).flatMap((d) => d.dates);
  if (nights.length === 1) return `conflict: night ${nights[0]!} is already taken`;
  if (nights.length > 1) return `conflict: nights ${nights.join(', ')} are already taken`;
  const message = err.rawMessage;
  switch (err.code) {
    case Code.NotFound:
      return /not found/i.test(message) ? message : `not found: ${message}`;
    case Code.AlreadyExists:
      return `already exists: ${message}`;
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return `refused: ${message}`;
    case Code.ResourceExhausted:
      return `too many requests, try again later: ${message}`;
    case Code.Unimplemented:
      return `not enabled: ${message}`;
    case Code.DeadlineExceeded:
      return `the internal API at ${baseUrl} did not answer within ${timeoutMs / 1000} s`;
    case Code.Aborted:
      return `interrupted by a concurrent change, try again: ${message}`;
    case Code.Canceled:
      return `cancelled: ${message}`;
    default:
      return `the internal API at ${baseUrl} failed: ${message} (the system's log has the details)`;
  }
}
