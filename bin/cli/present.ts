/**
 * How psync shows protobuf values to operators: snake_case field names, enum values as
 * their lower-case names (`sandbox`, `confirmed`, `pending_verification`), webhook
 * event kinds by their public names (`booking.confirmed`), timestamps as ISO 8601, an
 * absent optional field or message as null.
 */
import type { DescEnum, DescField, DescMessage, Message } from '@bufbuild/protobuf';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { Environment } from '../../gen/psync/common/v1/environment_pb';
import { WebhookEventTypeSchema, type WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames, environments } from '../../services/kit/base';

/** A UUID, as workspace ids and event ids are. */
export { UUID_PATTERN as UUID } from '../../services/kit/base';

/** The operator-facing name of an environment. */
export function environmentName(env: Environment): string {
  return environments.nameOr(env, 'unspecified');
}

const webhookEventTypes = new EnumNames<WebhookEventType>(WebhookEventTypeSchema, { spell: dottedKind });

/** A protobuf Timestamp as ISO 8601, or null when absent. */
export function isoOrNull(t: Timestamp | undefined): string | null {
  return t ? timestampDate(t).toISOString() : null;
}

/** The public name of a webhook event kind ("booking.confirmed" …). */
export function webhookEventTypeName(t: WebhookEventType): string {
  return webhookEventTypes.nameOr(t, 'unknown');
}

/** An enum value's operator-facing name; null for the zero value (`*_UNSPECIFIED`). */
function enumName(desc: DescEnum, value: number): string | null {
  if (value === 0) return null;
  if (desc.typeName === WebhookEventTypeSchema.typeName) return webhookEventTypeName(value);
  const v = desc.values.find((e) => e.number === value);
  return v ? v.localName.toLowerCase() : String(value);
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

function scalarValue(value: unknown): Json {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value as Json;
}

function messageValue(desc: DescMessage, value: Message | undefined): Json {
  if (value === undefined) return null;
  if (desc.typeName === 'google.protobuf.Timestamp') return isoOrNull(value as Timestamp);
  return presentMessage(desc, value);
}

function fieldValue(field: DescField, value: unknown): Json {
  switch (field.fieldKind) {
    case 'scalar':
      return value === undefined ? null : scalarValue(value);
    case 'enum':
      return value === undefined ? null : enumName(field.enum, value as number);
    case 'message':
      return messageValue(field.message, value as Message | undefined);
    case 'list':
      return (value as unknown[]).map((v) =>
        field.listKind === 'message' ? messageValue(field.message, v as Message) : field.listKind === 'enum' ? enumName(field.enum, v as number) : scalarValue(v),
      );
    case 'map': {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        out[k] = field.mapKind === 'message' ? messageValue(field.message, v as Message) : field.mapKind === 'enum' ? enumName(field.enum, v as number) : scalarValue(v);
      }
      return out;
    }
  }
}

/** A message as a JSON object: every field by its proto (snake_case) name, in declaration order. */
export function presentMessage(desc: DescMessage, message: Message): Record<string, Json> {
  const out: Record<string, Json> = {};
  const record = message as unknown as Record<string, unknown>;
  for (const field of desc.fields) {
    let value: unknown;
    if (field.oneof) {
      const chosen = record[field.oneof.localName] as { case: string | undefined; value?: unknown };
      value = chosen.case === field.localName ? chosen.value : undefined;
    } else {
      value = record[field.localName];
    }
    out[field.name] = fieldValue(field, value);
  }
  return out;
}
