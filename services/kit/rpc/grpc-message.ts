/**
 * The `grpc-message` field as the gRPC HTTP/2 protocol spells it ("Status-Message →
 * Percent-Encoded": every byte of the UTF-8 message outside 0x20–0x7E, and `%`, as
 * `%XX`; everything else as it is). Connect-ES writes it with `encodeURIComponent`,
 * which also escapes `;`, `,`, `:`, `/`, `?`, `#`, `&`, `=`, `+`, `$` and `@`; that is
 * legal, but `@grpc/grpc-js` decodes the field with `decodeURI`, which leaves exactly
 * those escapes alone, so a grpc-js client showed `a%3B b%2C c%3A d`. Connect and Go
 * clients decode any escape, so the spec's spelling reads right in all of them.
 * test/kit/grpc-message.test.ts checks it with a stock grpc-js client.
 */
import type { connectNodeAdapter } from '@connectrpc/connect-node';

const GRPC_MESSAGE = 'grpc-message';

/** `message` percent-encoded as the gRPC spec asks: only bytes outside 0x20–0x7E, and `%`. */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A `grpc-message` value as Connect-ES wrote it, re-encoded the spec's way (left alone if it is not valid percent-encoding). */
export function respellGrpcMessage(value: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(value));
  } catch {
    return value;
  }
}

type NodeHeaders = Record<string, string | string[] | number | undefined>;

function respellIn(headers: unknown): void {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return;
  const h = headers as NodeHeaders;
  const value = h[GRPC_MESSAGE];
  if (typeof value === 'string') h[GRPC_MESSAGE] = respellGrpcMessage(value);
}

type NodeHandler = ReturnType<typeof connectNodeAdapter>;
/** The two methods connect-node sends headers and trailers with (the same on http and http2 responses). */
interface HeaderWriter {
  writeHead(...args: unknown[]): unknown;
  addTrailers(trailers: unknown): void;
}

/**
 * Wraps a connect-node request handler so that the `grpc-message` it sends, in the
 * trailers or in the headers of a trailers-only answer, is spelled as the gRPC spec
 * spells it. The headers object passed to `writeHead`/`addTrailers` is connect-node's
 * own, built for this answer.
 */
export function withSpecGrpcMessage(handler: NodeHandler): NodeHandler {
  return (req, res) => {
    const response = res as unknown as HeaderWriter;
    const writeHead = response.writeHead.bind(response);
    const addTrailers = response.addTrailers.bind(response);
    response.writeHead = (...args) => {
      for (const arg of args) respellIn(arg);
      return writeHead(...args);
    };
    response.addTrailers = (trailers) => {
      respellIn(trailers);
      addTrailers(trailers);
    };
    handler(req, res);
  };
}
