/** Enum name tables derived from descriptors (enum-names.ts). */
import { BlockReason, BlockReasonSchema } from '../../../gen/psync/calendar/v1/calendar_pb';
import { Environment } from '../../../gen/psync/common/v1/environment_pb';
import { WebhookEventType, WebhookEventTypeSchema } from '../../../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames, environments } from './enum-names';

describe('EnumNames', () => {
  const reasons = new EnumNames<BlockReason>(BlockReasonSchema);

  test('names are the values without the enum prefix, lower case; the zero value has none', () => {
    expect(reasons.names).toEqual(['reserved', 'maintenance', 'owner_stay', 'other']);
    expect(reasons.name(BlockReason.OWNER_STAY)).toBe('owner_stay');
    expect(reasons.value('owner_stay')).toBe(BlockReason.OWNER_STAY);
    expect(() => reasons.name(BlockReason.UNSPECIFIED)).toThrow(/psync.calendar.v1.BlockReason/);
    expect(() => reasons.name(42 as BlockReason)).toThrow();
    expect(() => reasons.value('unspecified')).toThrow();
    expect(reasons.nameOf(BlockReason.UNSPECIFIED)).toBeUndefined();
    expect(reasons.nameOr(BlockReason.UNSPECIFIED, 'reserved')).toBe('reserved');
    expect(reasons.find('nope')).toBeUndefined();
  });

  test('a spelling: webhook kinds are dotted', () => {
    const kinds = new EnumNames<WebhookEventType>(WebhookEventTypeSchema, { spell: dottedKind });
    expect(kinds.names).toEqual(['endpoint.challenge', 'booking.confirmed', 'booking.cancelled', 'user.erased']);
    expect(kinds.value('user.erased')).toBe(WebhookEventType.USER_ERASED);
  });

  test('environments', () => {
    expect(environments.name(Environment.SANDBOX)).toBe('sandbox');
    expect(environments.value('production')).toBe(Environment.PRODUCTION);
  });
});
