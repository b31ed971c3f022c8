/**
 * gRPC server reflection (`grpc.reflection.v1.ServerReflection`, and the older
 * `grpc.reflection.v1alpha` name that grpcurl before 1.8.8, Postman and grpc_cli still
 * ask for), so `grpcurl` and `buf curl` can list and call the internal API with no
 * `.proto` files (docs/marketplace.md "Reflection").
 *
 * There is no Connect-ES package for it (`@grpc/reflection` is for grpc-js servers),
 * and none is needed: every generated service carries its protobuf-es file
 * descriptor (`DescService.file.proto`, a FileDescriptorProto), and those of its
 * imports (`DescFile.dependencies`). The index is built once from the services the
 * internal server hosts — exactly those, so a process reveals what it serves and
 * nothing else.
 *
 * Answers (one response per request, in order; a question without an answer gets an
 * `error_response`, the stream goes on):
 * - list_services: every hosted service, reflection and health included;
 * - files: those of the hosted services, their imports, and the error details'
 *   (DETAIL_FILES), nothing else;
 * - file_by_filename / file_containing_symbol (a service, method, message, field,
 *   enum, enum value or extension): that file and its imports, transitively, each a
 *   serialized FileDescriptorProto; unknown → NOT_FOUND;
 * - file_containing_extension / all_extension_numbers_of_type: from the extensions
 *   the files declare (none today: the API is proto3) → NOT_FOUND for an unknown
 *   extension or type, an empty list for a known message type;
 * - no question set → INVALID_ARGUMENT.
 *
 * Access: reflection reveals the API's shape only, never data, but it still needs a
 * credential — any accepted caller role may use it (access-policy.ts), so a network
 * scanner without one learns nothing (docs/security/internal-access.md).
 */
import { Code, type ConnectRouter } from '@connectrpc/connect';
import { toBinary, type DescEnum, type DescExtension, type DescFile, type DescMessage, type DescService, type MessageInitShape } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import {
  ServerReflection as ServerReflectionV1,
  type ServerReflectionRequest as RequestV1,
  type ServerReflectionResponseSchema as ResponseV1Schema,
} from '../../../gen/grpc/reflection/v1/reflection_pb';
import {
  ServerReflection as ServerReflectionV1Alpha,
  type ServerReflectionRequest as RequestV1Alpha,
  type ServerReflectionResponseSchema as ResponseV1AlphaSchema,
} from '../../../gen/grpc/reflection/v1alpha/reflection_pb';
import { file_psync_common_v1_errors } from '../../../gen/psync/common/v1/errors_pb';

/** The reflection services themselves (hosted, and listed, by every internal server). */
export const REFLECTION_SERVICES: readonly DescService[] = [ServerReflectionV1, ServerReflectionV1Alpha];

/**
 * Files described although no hosted service imports them: the error details every
 * service attaches (ErrorDetail, ConflictDetail …: proto/psync/common/v1/errors.proto),
 * so a tool can decode `grpc-status-details-bin` from reflection alone.
 */
export const DETAIL_FILES: readonly DescFile[] = [file_psync_common_v1_errors];

/** The answer to one reflection request, in the shape both protocol versions share. */
type Answer = MessageInitShape<typeof ResponseV1Schema>;
type Question = RequestV1 | RequestV1Alpha;

/** What a set of hosted services declares: files by name, symbols and extensions to files. */
export class ReflectionIndex {
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly extensions = new Map<string, DescExtension[]>();
  private readonly messages = new Set<string>();
  private readonly encoded = new Map<DescFile, Uint8Array>();
  /** Fully-qualified names of the hosted services, sorted. */
  readonly serviceNames: readonly string[];

  constructor(services: Iterable<DescService>, files: Iterable<DescFile> = []) {
    const names = new Set<string>();
    for (const s of services) {
      names.add(s.typeName);
      this.addFile(s.file);
    }
    for (const f of files) this.addFile(f);
    this.serviceNames = [...names].sort();
  }

  /** The file named `name` (e.g. "psync/calendar/v1/calendar.proto") and its imports, or undefined. */
  fileByName(name: string): Uint8Array[] | undefined {
    const f = this.files.get(name);
    return f && this.withDependencies(f);
  }

  /** The file declaring `symbol` (a leading dot is accepted) and its imports, or undefined. */
  fileContainingSymbol(symbol: string): Uint8Array[] | undefined {
    const f = this.symbols.get(symbol.startsWith('.') ? symbol.slice(1) : symbol);
    return f && this.withDependencies(f);
  }

  /** The file declaring extension `number` of `extendee` and its imports, or undefined. */
  fileContainingExtension(extendee: string, number: number): Uint8Array[] | undefined {
    const ext = this.extensions.get(extendee)?.find((e) => e.number === number);
    return ext && this.withDependencies(ext.file);
  }

  /** The extension numbers of message type `typeName`; undefined for an unknown type. */
  extensionNumbers(typeName: string): number[] | undefined {
    if (!this.messages.has(typeName)) return undefined;
    return (this.extensions.get(typeName) ?? []).map((e) => e.number);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const m of file.messages) this.addMessage(file, m);
    for (const e of file.enums) this.addEnum(file, e);
    for (const e of file.extensions) this.addExtension(file, e);
    for (const s of file.services) {
      this.symbols.set(s.typeName, file);
      for (const m of s.methods) this.symbols.set(`${s.typeName}.${m.name}`, file);
    }
    for (const d of file.dependencies) this.addFile(d);
  }

  private addMessage(file: DescFile, m: DescMessage): void {
    this.symbols.set(m.typeName, file);
    this.messages.add(m.typeName);
    for (const f of m.fields) this.symbols.set(`${m.typeName}.${f.name}`, file);
    for (const o of m.oneofs) this.symbols.set(`${m.typeName}.${o.name}`, file);
    for (const n of m.nestedMessages) this.addMessage(file, n);
    for (const e of m.nestedEnums) this.addEnum(file, e);
    for (const e of m.nestedExtensions) this.addExtension(file, e);
  }

  private addEnum(file: DescFile, e: DescEnum): void {
    this.symbols.set(e.typeName, file);
    // Enum values are scoped like their enum's siblings (protobuf scoping rules).
    const scope = e.typeName.includes('.') ? e.typeName.slice(0, e.typeName.lastIndexOf('.') + 1) : '';
    for (const v of e.values) this.symbols.set(`${scope}${v.name}`, file);
  }

  private addExtension(file: DescFile, e: DescExtension): void {
    this.symbols.set(e.typeName, file);
    const list = this.extensions.get(e.extendee.typeName) ?? [];
    list.push(e);
    this.extensions.set(e.extendee.typeName, list);
  }

  /** `file` first, then every file it imports, transitively, each once. */
  private withDependencies(file: DescFile): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<DescFile>();
    const visit = (f: DescFile) => {
      if (seen.has(f)) return;
      seen.add(f);
      out.push(this.encode(f));
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return out;
  }

  private encode(file: DescFile): Uint8Array {
    let bytes = this.encoded.get(file);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.encoded.set(file, bytes);
    }
    return bytes;
  }
}

function notFound(message: string): Answer['messageResponse'] {
  return { case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage: message } };
}

/** The answer to one request (`Code` values are the gRPC status codes). */
export function answer(index: ReflectionIndex, req: Question): Answer {
  const q = req.messageRequest;
  // Echoed as plain values: v1 and v1alpha messages differ only in their type names.
  const originalRequest: Answer['originalRequest'] = {
    host: req.host,
    messageRequest:
      q.case === 'fileContainingExtension'
        ? { case: q.case, value: { containingType: q.value.containingType, extensionNumber: q.value.extensionNumber } }
        : q.case === undefined
          ? { case: undefined }
          : { case: q.case, value: q.value },
  };
  const files = (found: Uint8Array[] | undefined, what: string): Answer['messageResponse'] =>
    found ? { case: 'fileDescriptorResponse', value: { fileDescriptorProto: found } } : notFound(`${what} not found`);
  let messageResponse: Answer['messageResponse'];
  switch (q.case) {
    case 'listServices':
      messageResponse = { case: 'listServicesResponse', value: { service: index.serviceNames.map((name) => ({ name })) } };
      break;
    case 'fileByFilename':
      messageResponse = files(index.fileByName(q.value), `file "${q.value}"`);
      break;
    case 'fileContainingSymbol':
      messageResponse = files(index.fileContainingSymbol(q.value), `symbol "${q.value}"`);
      break;
    case 'fileContainingExtension':
      messageResponse = files(
        index.fileContainingExtension(q.value.containingType, q.value.extensionNumber),
        `extension ${q.value.extensionNumber} of "${q.value.containingType}"`,
      );
      break;
    case 'allExtensionNumbersOfType': {
      const numbers = index.extensionNumbers(q.value);
      messageResponse = numbers ? { case: 'allExtensionNumbersResponse', value: { baseTypeName: q.value, extensionNumber: numbers } } : notFound(`type "${q.value}" not found`);
      break;
    }
    default:
      messageResponse = { case: 'errorResponse', value: { errorCode: Code.InvalidArgument, errorMessage: 'no message_request set' } };
  }
  return { validHost: req.host, originalRequest, messageResponse };
}

/**
 * Registers both reflection services on `router`, describing `hosted` (the services
 * registered so far; the reflection services are added).
 */
export function registerReflection(router: ConnectRouter, hosted: Iterable<DescService>): ReflectionIndex {
  const index = new ReflectionIndex([...hosted, ...REFLECTION_SERVICES], DETAIL_FILES);
  router.service(ServerReflectionV1, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(index, req);
    },
  });
  router.service(ServerReflectionV1Alpha, {
    async *serverReflectionInfo(requests) {
      // The same shapes under the v1alpha type names.
      for await (const req of requests) yield answer(index, req) as MessageInitShape<typeof ResponseV1AlphaSchema>;
    },
  });
  return index;
}
