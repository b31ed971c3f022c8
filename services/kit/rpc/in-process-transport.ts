/**
 * Unary calls to a service hosted by THIS process, without the network.
 *
 * In the all-in-one process (`main.ts all`, the embedded default) the gateway
 * and the four services share one Node.js process, and each contract request makes two
 * internal calls (Authorize, then the service's RPC). Over h2c each cost ~2–4 ms of CPU
 * (HTTP/2 framing, protobuf encode/decode on both sides, Connect's stream pipeline and
 * the garbage it leaves) — more than the SQL behind it (docs/performance.md,
 * "Authenticated gateway path"). This transport calls the registered implementation
 * directly, with the same semantics a client sees over the wire:
 *
 * - the client interceptors, then the server interceptors, run around the handler
 *   (so the CLIENT and SERVER spans, and the trace context in the headers, are the
 *   same as over h2c);
 * - the handler gets a HandlerContext with the request headers, the deadline
 *   (`timeoutMs`) and a signal aborted when the call ends (completed, timed out or
 *   cancelled by the caller);
 * - a thrown non-Connect error reaches the caller as `Code.Internal` "internal error"
 *   (its message withheld, as over the wire), a ConnectError (code, message, metadata,
 *   details) as it is; a deadline or a cancelled signal ends
 *   the call with DeadlineExceeded / Canceled even if the handler ignores the signal;
 * - messages are normalised with `create()` as the wire would give them. They are not
 *   copied: no caller keeps or mutates a request after the call, and no handler keeps
 *   or mutates a response after returning it.
 *
 * Streaming methods (CalendarService.WatchEvents) are not handled here: they go
 * through `fallback`, the network transport, unchanged.
 */
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImpl,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';
import { create, type DescMessage, type DescMethod, type DescMethodUnary, type DescService, type MessageInitShape } from '@bufbuild/protobuf';

import type { Role } from './access-policy';
import { IN_PROCESS_CALLER } from './internal-auth';

type UnaryFn = (req: UnaryRequest) => Promise<UnaryResponse>;

/** The signal of a call made without one: never aborted, shared (no allocation per call). */
const NO_SIGNAL = new AbortController().signal;
/**
 * The reason the handler's signal carries once its call has completed (as a server
 * aborts it then); one shared error — an `abort()` without a reason builds a
 * DOMException with a stack trace on every call.
 */
const CALL_COMPLETED = new ConnectError('the call has completed', Code.Canceled);

/** The service implementations registered in this process, by fully-qualified name. */
export class InProcessServices {
  /** Keyed by the method descriptor itself (generated descriptors are singletons): no string per call. */
  private readonly methods = new Map<DescMethod, MethodImplSpec>();
  private readonly services = new Set<string>();

  register(service: DescService, impl: Partial<ServiceImpl<DescService>>): void {
    const spec = createServiceImplSpec(service, impl);
    this.services.add(service.typeName);
    for (const m of Object.values(spec.methods)) this.methods.set(m.method, m);
  }

  has(service: DescService): boolean {
    return this.services.has(service.typeName);
  }

  unary(method: DescMethodUnary): MethodImplSpec | undefined {
    const spec = this.methods.get(method);
    return spec?.kind === 'unary' ? spec : undefined;
  }

  /**
   * Wraps `router` so every `router.service(…)` registration is also recorded here;
   * the process runner passes the wrapper to each module's `routes()`.
   */
  recording(router: ConnectRouter): ConnectRouter {
    const recorder: ConnectRouter = {
      get handlers() {
        return router.handlers;
      },
      service: (service, implementation, options) => {
        this.register(service, implementation);
        router.service(service, implementation, options);
        return recorder;
      },
      rpc(method, impl, options) {
        // Single-method registrations stay network-only (none exist today).
        router.rpc(method, impl, options);
        return recorder;
      },
    };
    return recorder;
  }
}

/**
 * Where a network call crosses the wire: as the network server does, a ConnectError
 * travels as it is; anything else becomes a bare `internal error`, its message kept
 * from the caller (the cause stays attached for in-process callers' logs).
 */
const wireBoundary: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    throw err instanceof ConnectError ? err : new ConnectError('internal error', Code.Internal, undefined, undefined, err);
  }
};

/** Applies interceptors the way Connect does: the first in the list is the outermost. */
function intercept(next: UnaryFn, interceptors: Interceptor[]): UnaryFn {
  return interceptors.reduceRight<UnaryFn>((fn, i) => i(fn as never) as unknown as UnaryFn, next);
}

/**
 * The HandlerContext of an in-process call. Connect's `createHandlerContext` builds two
 * linked AbortControllers, a deadline signal and three Headers objects per call; here
 * the signal and the response headers are created only if the handler asks for them
 * (most never do), and the deadline is one timer.
 */
class InProcessHandlerContext implements HandlerContext {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly requestMethod = 'POST';
  readonly protocolName = 'in-process';
  readonly url: string;
  readonly requestHeader: Headers;
  readonly values: ContextValues;
  private readonly deadline: number | undefined;
  private controller?: AbortController;
  private header?: Headers;
  private trailer?: Headers;
  private endReason?: unknown;
  ended = false;
  timer?: ReturnType<typeof setTimeout>;
  onCallerAbort?: () => void;

  constructor(
    private readonly req: UnaryRequest,
    timeoutMs: number | undefined,
  ) {
    this.service = req.service;
    this.method = req.method;
    this.url = req.url;
    this.requestHeader = req.header;
    this.values = req.contextValues;
    this.deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.ended) this.controller.abort(this.endReason);
    }
    return this.controller.signal;
  }

  readonly timeoutMs = (): number | undefined => (this.deadline === undefined ? undefined : this.deadline - Date.now());

  get responseHeader(): Headers {
    return (this.header ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.trailer ??= new Headers());
  }

  /** Ends the call once: clears the timer and listener, aborts the signal with `reason`. */
  end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = reason;
    if (this.timer) clearTimeout(this.timer);
    if (this.onCallerAbort) this.req.signal.removeEventListener('abort', this.onCallerAbort);
    this.controller?.abort(reason);
  }
}

export function createInProcessTransport(opts: {
  services: InProcessServices;
  /** Client-side interceptors (tracing), outermost first. */
  clientInterceptors: Interceptor[];
  /** Server-side interceptors (tracing), as the internal server applies them. */
  serverInterceptors: Interceptor[];
  /** Network transport for streaming calls. */
  fallback: Transport;
  /**
   * The calling component's role, bound to every call's context values
   * (internal-auth.ts IN_PROCESS_CALLER): the server's authentication interceptor
   * takes it in place of a credential.
   */
  callerRole?: Role;
  defaultTimeoutMs?: number;
}): Transport {
  const { services } = opts;
  // Client interceptors wrap the server's, as a network call is wrapped on both ends;
  // between them, what the wire would do to a non-Connect error (the server's
  // interceptors, kit/errors.ts among them, see the handler's own error first).
  const interceptors = [...opts.clientInterceptors, wireBoundary, ...opts.serverInterceptors];
  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      input: MessageInitShape<I>,
      contextValues?: ReturnType<typeof createContextValues>,
    ): Promise<UnaryResponse<I, O>> {
      const spec = services.unary(method);
      if (!spec) throw new ConnectError(`${method.parent.typeName}.${method.name} is not hosted in this process`, Code.Unimplemented);
      const deadlineMs = timeoutMs ?? opts.defaultTimeoutMs;
      const handle: UnaryFn = (req) => {
        const ctx = new InProcessHandlerContext(req, deadlineMs);
        return new Promise<UnaryResponse>((resolve, reject) => {
          const fail = (err: unknown) => {
            ctx.end(err instanceof ConnectError ? err : CALL_COMPLETED);
            // Raw, as a handler's error reaches the server interceptors; wireBoundary converts it.
            reject(err);
          };
          // The deadline and the caller's signal end the call even if the handler
          // ignores its signal (a network client would stop waiting too).
          if (deadlineMs !== undefined) ctx.timer = setTimeout(() => fail(new ConnectError('the operation timed out', Code.DeadlineExceeded)), deadlineMs);
          if (req.signal !== NO_SIGNAL) {
            if (req.signal.aborted) return fail(ConnectError.from(req.signal.reason, Code.Canceled));
            ctx.onCallerAbort = () => fail(ConnectError.from(req.signal.reason, Code.Canceled));
            req.signal.addEventListener('abort', ctx.onCallerAbort, { once: true });
          }
          let result: unknown;
          try {
            result = spec.impl(req.message as never, ctx);
          } catch (err) {
            return fail(err);
          }
          Promise.resolve(result).then((out) => {
            if (ctx.ended) return;
            ctx.end(CALL_COMPLETED); // as a server does when the call completes: downstream work sees the signal
            resolve({
              stream: false,
              service: req.service,
              method: req.method,
              header: ctx.responseHeader,
              trailer: ctx.responseTrailer,
              message: create(req.method.output, out as MessageInitShape<DescMessage>),
            });
          }, fail);
        });
      };
      const request: UnaryRequest = {
        stream: false,
        service: method.parent,
        method: method,
        requestMethod: 'POST',
        url: `in-process:/${method.parent.typeName}/${method.name}`,
        signal: signal ?? NO_SIGNAL,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message: create(method.input, input),
      };
      if (opts.callerRole) request.contextValues.set(IN_PROCESS_CALLER, opts.callerRole);
      const res = await intercept(handle, interceptors)(request);
      return res as unknown as UnaryResponse<I, O>;
    },
    stream(method, signal, timeoutMs, header, input, contextValues) {
      return opts.fallback.stream(method, signal, timeoutMs, header, input, contextValues);
    },
  };
}
