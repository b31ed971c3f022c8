/** The gateway's enum tables (derived from descriptors) name exactly what the public JSON Schemas list. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { blockReasons, propertyStatuses, webhookEvents } from './enums';

describe("the gateway's tables name what the public schemas list", () => {
  const schema = (file: string) => readFileSync(join(__dirname, '..', 'schemas', file), 'utf8');
  /** The `enum` list that holds `member` in a schema file. */
  const enumHolding = (text: string, member: string): string[] => {
    const m = new RegExp(`"enum":\\s*(\\[[^\\]]*"${member.replace('.', '\\.')}"[^\\]]*\\])`).exec(text);
    return JSON.parse(m![1]!) as string[];
  };

  test.each([
    ['property.json status', propertyStatuses.names, enumHolding(schema('property.json'), 'unlisted')],
    ['block.json reason', blockReasons.names, enumHolding(schema('block.json'), 'owner_stay')],
    ['webhook-endpoint.json events', webhookEvents.names.filter((n: string) => n !== 'endpoint.challenge'), enumHolding(schema('webhook-endpoint.json'), 'booking.confirmed')],
  ])('%s', (_label, names, listed) => {
    expect([...names].sort()).toEqual([...listed].sort());
  });
});
