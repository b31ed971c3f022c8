/**
 * Error messages through the internal server (services/kit/rpc/grpc-message.ts): a stock
 * @grpc/grpc-js client (with @grpc/proto-loader reading the published .proto, nothing
 * of ours in between) and our Connect client both read a message with `;`, `,`, `:`,
 * `%`, non-ASCII and a line break exactly as the service threw it; the trailer on the
 * wire is the gRPC spec's percent-encoding.
 */
import http2 from 'node:http2';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { encodeGrpcMessage, respellGrpcMessage } from '../../services/kit/rpc';
import { HealthState } from '../../services/kit/rpc';
import { InternalClients } from '../../services/kit/rpc';
import { startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { createLogger } from '../../services/kit/base';
import { ROOT } from '../support/process';

const MESSAGE = 'listing lst_1: nights 2030-08-01, 2030-08-02; held by booking BK-1 (100% taken) – café\nsee: https://x.example/?a=b&c=d#e';

let server: InternalServer;
let stock: grpc.Client & { Migrate(req: object, cb: (err: grpc.ServiceError | null) => void): void };

beforeAll(async () => {
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log: createLogger({ level: 'silent', name: 'grpc-message-test' }),
    health: new HealthState(),
    routes(router) {
      router.service(AdminService, {
        migrate: () => {
          throw new ConnectError(MESSAGE, Code.FailedPrecondition);
        },
      });
    },
  });
  const def = protoLoader.loadSync('psync/admin/v1/admin.proto', { includeDirs: [join(ROOT, 'proto')] });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { psync: { admin: { v1: { AdminService: grpc.ServiceClientConstructor } } } };
  stock = new pkg.psync.admin.v1.AdminService(new URL(server.url).host, grpc.credentials.createInsecure()) as unknown as typeof stock;
});

afterAll(async () => {
  stock?.close();
  await server?.close(100);
});

test('the spec encodes only bytes outside 0x20–0x7E and %', () => {
  expect(encodeGrpcMessage('a; b, c: d/e?f#g&h=i+j$k@l')).toBe('a; b, c: d/e?f#g&h=i+j$k@l');
  expect(encodeGrpcMessage('100% café\n')).toBe('100%25 caf%C3%A9%0A');
  expect(respellGrpcMessage(encodeURIComponent(MESSAGE))).toBe(encodeGrpcMessage(MESSAGE));
  expect(respellGrpcMessage('%E0%A4%A')).toBe('%E0%A4%A');
});

test('a stock grpc-js client reads the message verbatim', async () => {
  const err = await new Promise<grpc.ServiceError>((resolve, reject) => stock.Migrate({}, (e) => (e ? resolve(e) : reject(new Error('no error')))));
  expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
  expect(err.details).toBe(MESSAGE);
});

test('a Connect client reads the message verbatim', async () => {
  const clients = new InternalClients([], 5000);
  try {
    await expect(clients.client(AdminService, server.url).migrate({})).rejects.toMatchObject({ code: Code.FailedPrecondition, rawMessage: MESSAGE });
  } finally {
    clients.close();
  }
});

test('the grpc-message on the wire is percent-encoded as the spec spells it', async () => {
  const session = http2.connect(server.url);
  try {
    const trailer = await new Promise<string | undefined>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': `/${AdminService.typeName}/Migrate`,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      let message: string | undefined;
      const take = (h: http2.IncomingHttpHeaders) => (message ??= h['grpc-message'] as string | undefined);
      stream.on('response', take);
      stream.on('trailers', take);
      stream.on('error', reject);
      stream.on('close', () => resolve(message));
      stream.resume();
      stream.end(Buffer.alloc(5)); // one empty message: flag 0, length 0
    });
    expect(trailer).toBe(encodeGrpcMessage(MESSAGE));
    expect(trailer).toContain('; held by booking BK-1 (100%25 taken)');
  } finally {
    session.destroy();
  }
});
