/**
 * Database spans and `db.client.operation.duration` for postgres.js, which has no
 * instrumentation hooks of its own (porsager/postgres#461): `instrumentSql` wraps a
 * postgres.js instance so that every statement it, its transactions (`begin`,
 * `savepoint`) and its reserved connections (`reserve`) run is measured from the moment
 * it is handed to the pool to its answer, as the database semantic conventions say:
 * `db.system.name` postgresql, `db.namespace` the database, `db.operation.name` the
 * statement's first keyword, `server.address`/`server.port`, and on failure
 * `db.response.status_code` (the SQLSTATE) and `error.type`. Spans (CLIENT, named
 * `<operation> <database>`, children of the caller's span) also carry
 * `db.query.text`: the statement as sent, with `$n` placeholders for every value of a
 * tagged template; the text of `sql.unsafe` is left out, as it may hold literals.
 *
 * How: a statement is a postgres.js `Query` (a lazy promise) whose `handler` the pool
 * calls once, when the statement is first awaited, and which the connection settles
 * through its `resolve`/`reject`; the wrapper replaces these three per-statement
 * properties. A query used as a fragment inside another is never handed over itself,
 * so it is never counted. test/kit/sql-telemetry.test.ts checks this against the
 * postgres.js version installed.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import {
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_RESPONSE_STATUS_CODE,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from '@opentelemetry/semantic-conventions';
import { errorType, recordDbOperation } from '../telemetry';
import { spansAreRecorded, tracer } from '../telemetry';

/** Longest `db.query.text` kept on a span (characters). */
const MAX_QUERY_TEXT = 4096;

/** The postgres.js statement properties the wrapper uses (src/query.js). */
interface PgQuery extends Promise<unknown> {
  handler: (q: PgQuery) => unknown;
  resolve: (x: unknown) => unknown;
  reject: (e: unknown) => unknown;
  tagged: boolean;
  strings: readonly string[];
  string?: string;
}

/** Where a postgres.js instance connects, as its options say (every statement of it shares these). */
interface Target {
  attrs: Attributes;
  database: string;
}

function isQuery(x: unknown): x is PgQuery {
  return x instanceof Promise && typeof (x as Partial<PgQuery>).handler === 'function' && typeof (x as Partial<PgQuery>).resolve === 'function';
}

/** The first keyword of a statement (`SELECT`, `INSERT`, `WITH`, `CALL` …), upper-cased; undefined for none. */
export function operationName(text: string): string | undefined {
  const m = /^[\s(]*([A-Za-z]+)/.exec(text);
  return m ? m[1]!.toUpperCase() : undefined;
}

function targetOf(sql: { options?: { database?: string; host?: string[]; port?: number[]; path?: string } }): Target {
  const o = sql.options ?? {};
  const database = o.database ?? '';
  const attrs: Attributes = { [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL, [ATTR_DB_NAMESPACE]: database };
  if (o.path) attrs[ATTR_SERVER_ADDRESS] = o.path;
  else if (o.host?.[0]) {
    attrs[ATTR_SERVER_ADDRESS] = o.host[0];
    if (o.port?.[0] !== undefined) attrs[ATTR_SERVER_PORT] = o.port[0];
  }
  return { attrs, database };
}

/** Measures `q` from the pool's hand-over to its settlement. */
function measure(q: PgQuery, target: Target): PgQuery {
  const handOver = q.handler;
  q.handler = (query) => {
    const started = performance.now();
    const parent = context.active();
    const span: Span | undefined =
      spansAreRecorded() && trace.getSpan(parent) ? tracer().startSpan(target.database, { kind: SpanKind.CLIENT, attributes: target.attrs }, parent) : undefined;
    const { resolve, reject } = query;
    let done = false;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      const text = query.string ?? query.strings.join('?');
      const attrs: Attributes = { ...target.attrs };
      const op = operationName(text);
      if (op !== undefined) attrs[ATTR_DB_OPERATION_NAME] = op;
      if (err !== undefined) {
        const type = errorType(err);
        attrs[ATTR_ERROR_TYPE] = type;
        if (/^[0-9A-Z]{5}$/.test(type)) attrs[ATTR_DB_RESPONSE_STATUS_CODE] = type;
      }
      recordDbOperation((performance.now() - started) / 1000, attrs);
      if (span) {
        span.setAttributes(attrs);
        if (op !== undefined) span.updateName(`${op} ${target.database}`);
        if (query.tagged) span.setAttribute('db.query.text', text.length > MAX_QUERY_TEXT ? text.slice(0, MAX_QUERY_TEXT) : text);
        if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: String(attrs[ATTR_ERROR_TYPE]) });
        span.end();
      }
    };
    query.resolve = (x) => {
      finish();
      return resolve(x);
    };
    query.reject = (e) => {
      finish(e);
      return reject(e);
    };
    return handOver(query);
  };
  return q;
}

const wrapped = new WeakSet<object>();

/**
 * `sql` with every statement measured (see the file's comment); the instance itself is
 * not changed. Calling it twice on one instance wraps once.
 */
export function instrumentSql<S extends object>(sql: S): S {
  if (wrapped.has(sql)) return sql;
  const target = targetOf(sql);
  const wrapScope = (fn: unknown) => (typeof fn === 'function' ? (inner: object) => (fn as (s: object) => unknown)(wrap(inner)) : fn);
  const wrap = <T extends object>(s: T): T => {
    const proxy = new Proxy(s, {
      apply(fn, self, args) {
        const r = Reflect.apply(fn as (...a: unknown[]) => unknown, self, args);
        return isQuery(r) ? measure(r, target) : r;
      },
      get(obj, key, receiver) {
        const v = Reflect.get(obj, key, receiver);
        if (typeof v !== 'function') return v;
        switch (key) {
          case 'unsafe':
          case 'file':
            return (...args: unknown[]) => {
              const r = (v as (...a: unknown[]) => unknown).apply(obj, args);
              return isQuery(r) ? measure(r, target) : r;
            };
          case 'begin':
          case 'savepoint':
            // The scope function is the last argument: (fn), (options, fn) or (name, fn).
            return (...args: unknown[]) =>
              (v as (...a: unknown[]) => unknown).apply(
                obj,
                args.map((a, i) => (i === args.length - 1 ? wrapScope(a) : a)),
              );
          case 'reserve':
            return async () => wrap(await (v as () => Promise<object>).apply(obj));
          default:
            return v;
        }
      },
    });
    wrapped.add(proxy);
    return proxy;
  };
  return wrap(sql);
}
