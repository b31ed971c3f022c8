/**
 * Kept-alive connections of the egress client (egress.ts) for webhook deliveries:
 * per pool key an undici Agent whose every new connection is opened through the vetting
 * connector (egress-connector.ts), so a reused connection is always one that was vetted
 * and pinned when it was opened.
 */
import type { Socket } from 'node:net';
import { Agent, type buildConnector } from 'undici';
import { DEFAULT_CONNECT_TIMEOUT_MS, connector, markErrorsOnceUsed } from './egress-connector';
import type { Resolver } from './egress-rules';
import { systemClock, type Clock } from '../base';

/** TLS sessions remembered per pool key (one per server name it talks to). */
const SESSIONS_PER_KEY = 8;

export interface EgressPoolOptions {
  /** EGRESS_ALLOW_CIDRS: applied to every new connection of the pool. */
  allowCidrs?: readonly string[];
  /** Name resolution for new connections; default the system resolver. */
  resolver?: Resolver;
  /**
   * Connections per pool key and origin at most, busy and idle together; make it the
   * caller's own concurrency bound per key, so a request never waits for one.
   */
  maxSocketsPerKey: number;
  /**
   * Pool keys whose connections are kept; a request for another one closes the least
   * recently used key's connections (once its requests in flight are done). Default 64.
   */
  maxKeys?: number;
  /** An idle connection is closed after this long (sooner if the server announces a shorter Keep-Alive, less 1 s). Default 30000. */
  idleTimeoutMs?: number;
  /**
   * No connection older than this is reused (a changed DNS answer is then picked up):
   * a key's connections are renewed together at this age. Default 300000.
   */
  maxSocketAgeMs?: number;
  /** TCP connection and TLS handshake of a new connection. Default 5000. */
  connectTimeoutMs?: number;
  /** Tells the connections' age (maxSocketAgeMs); default the system's. */
  clock?: Clock;
}

/** One pool key's connections. */
export interface KeyConnections {
  /** Kept-alive connections per origin (undici Pools). */
  agent: Agent;
  /** The key's vetting connector (and TLS session cache), also for a retry on a connection of its own. */
  connect: buildConnector.connector;
  /** When `agent` was made: none of its connections is older. */
  since: number;
}

/**
 * Kept-alive connections for a caller that sends many requests to the same
 * partners (webhook deliveries). The address rule holds as without it: every new
 * connection resolves the name again, is refused unless an address passes the rules
 * (this pool's allowCidrs) and is pinned to that address; a request only ever reuses
 * a connection that was vetted that way when it was opened. Pass it as
 * `guardedRequest(url, { pool, poolKey })`; `close()` at shutdown.
 *
 * Per pool key an undici Agent, keeping per origin at most `maxSocketsPerKey`
 * connections (HTTP/1.1, one request at a time each) and a TLS session cache of its
 * own; connections are closed when idle or too old; at most `maxKeys` keys keep
 * connections.
 */
export class EgressPool {
  private readonly keys = new Map<string, KeyConnections>();
  private readonly open = new Set<Socket>();
  private isClosed = false;

  constructor(private readonly opts: EgressPoolOptions) {}

  private now(): number {
    return (this.opts.clock ?? systemClock).now();
  }

  /** @internal The connections of `poolKey`, most recently used from now on. */
  key(poolKey: string): KeyConnections {
    const found = this.keys.get(poolKey);
    this.keys.delete(poolKey); // (re-)inserted below: the Map's order is least recently used first
    if (found && this.now() - found.since < (this.opts.maxSocketAgeMs ?? 300_000)) {
      this.keys.set(poolKey, found);
      return found;
    }
    // A new key, or the key's connections reached the maximum age: new ones from now on
    // (vetted anew), the old ones closed once their requests in flight are done. The
    // connector, and so the key's TLS sessions, carry over. (Not undici's Pool
    // `clientTtl`: at the connection bound, a request can wait for a retired
    // connection's slot until its deadline.)
    if (found) void found.agent.close().catch(() => {});
    const connect = found?.connect ?? connector(this.opts, this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, SESSIONS_PER_KEY, (socket) => this.track(socket));
    const idle = this.opts.idleTimeoutMs ?? 30_000;
    const created: KeyConnections = {
      connect,
      since: this.now(),
      agent: new Agent({
        connect,
        connections: this.opts.maxSocketsPerKey,
        pipelining: 1,
        keepAliveTimeout: idle,
        keepAliveMaxTimeout: idle,
        keepAliveTimeoutThreshold: 1000,
      }),
    };
    this.keys.set(poolKey, created);
    if (this.keys.size > (this.opts.maxKeys ?? 64)) {
      const [oldest, evicted] = this.keys.entries().next().value!;
      this.keys.delete(oldest);
      void evicted.agent.close().catch(() => {});
    }
    return created;
  }

  /** Counts the socket while it is open; marks its errors once it has carried a response. */
  private track(socket: Socket): void {
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    markErrorsOnceUsed(socket);
  }

  /** True after close(): requests then make connections of their own again. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Closes every connection, idle or busy (at shutdown, after in-flight requests were
   * drained); returns how many were open.
   */
  close(): number {
    this.isClosed = true;
    const open = this.open.size;
    for (const { agent } of this.keys.values()) void agent.destroy().catch(() => {});
    this.keys.clear();
    return open;
  }
}
