/**
 * The Example Objects of the Properties operations (properties-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** The property of the examples, as pushed. */
const VILLA = {
  name: 'Villa Azure',
  description: 'A quiet two-bedroom villa with a garden, ten minutes on foot from the beach.',
  property_type: 'villa',
  address: { line1: '12 Chemin des Pins', city: 'Antibes', region: "Provence-Alpes-Côte d'Azur", postal_code: '06600', country: 'FR', latitude: 43.5804, longitude: 7.1251 },
  occupancy: { max_guests: 4, bedrooms: 2, beds: 3, bathrooms: 1 },
  base_rate: { value: '180.00', currency: 'EUR' },
  amenities: ['wifi', 'kitchen', 'pool', 'air_conditioning', 'parking'],
  photos: [
    { url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0 },
    { url: 'https://images.partner.example/villa-42/terrace.jpg', position: 1 },
  ],
  check_in_time: '15:00',
  check_out_time: '11:00',
  status: 'listed',
};

/** The property of the examples as stored: publishable, both photos ready. */
const VILLA_STORED = {
  provider_id: 'villa-42',
  listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
  publishable: true,
  missing: [],
  unknown_amenities: [],
  photos: [
    { url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0, state: 'ready' },
    { url: 'https://images.partner.example/villa-42/terrace.jpg', position: 1, state: 'ready' },
  ],
  updated_at: '2026-09-14T08:00:03.117Z',
  property: VILLA,
};

/** GET /properties */
export const listPropertiesExamples: OperationExamples = {
  responses: {
    '200': { page: { summary: 'The only property of the workspace', value: { items: [VILLA_STORED], has_more: false } } },
    '400': {
      invalid: {
        summary: 'A page size over 200 and a parameter the endpoint does not have',
        'x-request': { query: { page_size: '500', status: 'listed' } },
        errors: [
          { field: 'status', code: 'unknown_field' },
          { field: 'page_size', code: 'maximum' },
        ],
      },
    },
  },
};

/** GET /properties/{provider_id} */
export const getPropertyExamples: OperationExamples = {
  responses: {
    '200': {
      published: { summary: 'Every photo ready: publishable, with its listing', value: VILLA_STORED },
      photo_rejected: {
        summary: 'The cover is ready, the second photo was rejected',
        value: {
          provider_id: 'villa-42',
          listing_id: null,
          publishable: false,
          missing: ['photos'],
          unknown_amenities: [],
          photos: [
            { url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0, state: 'ready' },
            { url: 'https://images.partner.example/villa-42/terrace.jpg', position: 1, state: 'rejected', reason: 'too_small' },
          ],
          updated_at: '2026-09-14T08:00:03.117Z',
          property: VILLA,
        },
      },
    },
    '400': {
      invalid: {
        summary: 'A `provider_id` over 128 characters',
        'x-request': { path: { provider_id: 'ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp' } },
        errors: [{ field: 'provider_id', code: 'max_length' }],
      },
    },
  },
};

/** PUT /properties/{provider_id} */
export const upsertPropertyExamples: OperationExamples = {
  request: {
    complete: { summary: 'A complete property (first push)', value: VILLA },
    incomplete: {
      summary: 'Only the required fields, not yet for sale',
      value: {
        name: 'Studio Port Vauban',
        property_type: 'apartment',
        address: { line1: '3 Quai Henri Rambaud', city: 'Antibes', country: 'FR', latitude: 43.5851, longitude: 7.1283 },
        occupancy: { max_guests: 2, bedrooms: 0, beds: 1, bathrooms: 1 },
        check_in_time: '16:00',
        check_out_time: '10:00',
        status: 'unlisted',
      },
    },
  },
  responses: {
    '200': {
      complete: {
        summary: 'First push of a complete property: the photos are being fetched',
        value: {
          provider_id: 'villa-42',
          result: 'created',
          listing_id: null,
          status: 'listed',
          publishable: false,
          missing: ['photos_processing'],
          unknown_amenities: [],
          photos_rejected: [],
        },
      },
      incomplete: {
        summary: 'Held incomplete: no price, amenities or photos, and unlisted',
        value: {
          provider_id: 'villa-42',
          result: 'created',
          listing_id: null,
          status: 'unlisted',
          publishable: false,
          missing: ['price', 'amenities', 'cover_photo', 'photos', 'unlisted'],
          unknown_amenities: [],
          photos_rejected: [],
        },
      },
      published: {
        summary: 'A later push once the photos are processed: publishable, with its listing',
        value: {
          provider_id: 'villa-42',
          result: 'updated',
          listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
          status: 'listed',
          publishable: true,
          missing: [],
          unknown_amenities: ['sauna'],
          photos_rejected: [{ url: 'https://images.partner.example/villa-42/old-kitchen.jpg', reason: 'unreachable' }],
        },
      },
    },
    '400': {
      invalid: {
        summary: 'A country name instead of its code, a photo without a URL, and a field the contract does not have',
        'x-request': {
          body: {
            name: 'Villa Azure',
            description: 'A quiet two-bedroom villa with a garden, ten minutes on foot from the beach.',
            property_type: 'villa',
            address: {
              line1: '12 Chemin des Pins',
              city: 'Antibes',
              region: "Provence-Alpes-Côte d'Azur",
              postal_code: '06600',
              country: 'France',
              latitude: 43.5804,
              longitude: 7.1251,
            },
            occupancy: { max_guests: 4, bedrooms: 2, beds: 3, bathrooms: 1 },
            base_rate: { value: '180.00', currency: 'EUR' },
            amenities: ['wifi', 'kitchen', 'pool', 'air_conditioning', 'parking'],
            photos: [{ url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0 }, { position: 1 }],
            check_in_time: '15:00',
            check_out_time: '11:00',
            status: 'listed',
            guest_notes: 'no pets',
          },
        },
        errors: [
          { field: 'guest_notes', code: 'unknown_field' },
          { field: 'address.country', code: 'pattern' },
          { field: 'photos[1].url', code: 'required' },
        ],
      },
    },
  },
};
