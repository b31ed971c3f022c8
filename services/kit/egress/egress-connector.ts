/**
 * The connection-time check of the egress client (egress.ts): every socket it opens,
 * with a pool or without, comes from `connector` here.
 *
 * - The address rule holds at every connection: sockets are opened by undici's
 *   connector with the `lookup` of egress-rules.ts, which resolves the name when the
 *   socket opens, keeps only the addresses that pass (public unicast, or inside
 *   EGRESS_ALLOW_CIDRS) and hands Node exactly those to connect to. There is no second
 *   resolution between the vetting and the connection, so a connection goes to an
 *   address that passed, and a name that rebinds to a private address after an earlier
 *   check is refused at the connection, before any byte is sent.
 * - A kept-alive connection the server drops as a request goes out on it is told apart
 *   from a connection that never answered (onUsedConnection), so that request can be
 *   sent once more on a new connection.
 */
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import { EgressError, vettingLookup, type Resolver } from './egress-rules';

/** TCP connection and TLS handshake, when the caller gives no time-out. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/**
 * An undici connector whose sockets resolve through the vetting `lookup` (and so go
 * only to addresses that passed), with its own TLS session cache (`sessions` entries,
 * 0: none). `onSocket` sees every socket it opens.
 */
export function connector(
  rules: { allowCidrs?: readonly string[]; resolver?: Resolver },
  timeoutMs: number,
  sessions: number,
  onSocket?: (socket: Socket) => void,
): buildConnector.connector {
  const connect = buildConnector({ timeout: timeoutMs, maxCachedSessions: sessions, lookup: vettingLookup(rules) });
  if (!onSocket) return connect;
  return (options, callback) =>
    connect(options, (...args: buildConnector.CallbackArgs) => {
      if (args[1]) onSocket(args[1]);
      callback(...args);
    });
}

const USED_CONNECTION = Symbol('egress.usedConnection');

/**
 * True if `err` says a connection that had already carried a response was closed or
 * reset under this request before any answer: a kept-alive connection the server
 * dropped as the request went out. (A socket's bytesRead counts decrypted bytes: zero
 * on a connection that never answered.)
 */
export function onUsedConnection(err: unknown): boolean {
  if (err instanceof EgressError || typeof err !== 'object' || err === null) return false;
  const e = err as { code?: string; socket?: { bytesRead?: number }; [USED_CONNECTION]?: boolean };
  if (e.code === 'UND_ERR_SOCKET') return (e.socket?.bytesRead ?? 0) > 0;
  return (e.code === 'ECONNRESET' || e.code === 'EPIPE') && e[USED_CONNECTION] === true;
}

/** Marks the errors of `socket` once it has carried a response, for onUsedConnection. */
export function markErrorsOnceUsed(socket: Socket): void {
  socket.on('error', (err: Error & { [USED_CONNECTION]?: boolean }) => {
    if (socket.bytesRead > 0) err[USED_CONNECTION] = true;
  });
}
