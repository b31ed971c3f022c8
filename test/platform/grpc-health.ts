/**
 * A stock gRPC health client: @grpc/grpc-js with @grpc/proto-loader reading
 * proto/grpc/health/v1/health.proto — what Kubernetes probes and any third-party
 * gRPC tool would use, nothing of ours in between.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ROOT } from '../support/process';

export interface HealthClient {
  /** Check(service) → 'SERVING' | 'NOT_SERVING' | …; rejects with a grpc ServiceError (`code`). */
  check(service: string, deadlineMs?: number): Promise<string>;
  /** Watch(service): resolves with the first `count` statuses streamed, then cancels. */
  /** The first `count` statuses streamed; `onStatus` hears each as it arrives. */
  watch(service: string, count?: number, timeoutMs?: number, onStatus?: (status: string) => void): Promise<string[]>;
  close(): void;
}

let definition: protoLoader.PackageDefinition | undefined;

/**
 * A client for the server at `baseUrl` (http://host:port); with `token`, every call
 * carries `authorization: Bearer <token>` (an authenticated caller is told about one
 * service; an anonymous one about the whole process: services/kit/rpc/health.ts).
 */
export function healthClient(baseUrl: string, token?: string): HealthClient {
  definition ??= protoLoader.loadSync(join(ROOT, 'proto/grpc/health/v1/health.proto'), {
    keepCase: true,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const Health = pkg.grpc.health.v1.Health as grpc.ServiceClientConstructor;
  const client = new Health(new URL(baseUrl).host, grpc.credentials.createInsecure()) as any;
  const metadata = () => {
    const m = new grpc.Metadata();
    if (token) m.set('authorization', `Bearer ${token}`);
    return m;
  };
  return {
    check(service, deadlineMs = 5000) {
      return new Promise((resolve, reject) => {
        client.Check({ service }, metadata(), { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: { status: string }) =>
          err ? reject(err) : resolve(res.status),
        );
      });
    },
    watch(service, count = 1, timeoutMs = 10000, onStatus) {
      return new Promise((resolve, reject) => {
        const seen: string[] = [];
        const call = client.Watch({ service }, metadata()) as grpc.ClientReadableStream<{ status: string }>;
        const timer = setTimeout(() => {
          call.cancel();
          reject(new Error(`Watch(${service}) streamed ${JSON.stringify(seen)} within ${timeoutMs} ms, wanted ${count}`));
        }, timeoutMs);
        call.on('data', (msg) => {
          seen.push(msg.status);
          onStatus?.(msg.status);
          if (seen.length === count) {
            clearTimeout(timer);
            call.cancel();
            resolve(seen);
          }
        });
        call.on('error', (err: grpc.ServiceError) => {
          clearTimeout(timer);
          if (err.code !== grpc.status.CANCELLED) reject(err);
        });
      });
    },
    close() {
      client.close();
    },
  };
}
