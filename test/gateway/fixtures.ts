/**
 * Valid request bodies of the public contract, built fresh on every call so a test
 * can break exactly one thing.
 */

export function validProperty(): Record<string, unknown> {
  return {
    name: 'Harbour loft',
    description: 'Two rooms above the harbour.',
    property_type: 'apartment',
    address: {
      line1: '1 Quay Street',
      city: 'Lisbon',
      region: 'Lisboa',
      postal_code: '1100-001',
      country: 'PT',
      latitude: 38.7071,
      longitude: -9.1355,
    },
    occupancy: { max_guests: 4, bedrooms: 2, beds: 3, bathrooms: 1 },
    base_rate: { value: '120.50', currency: 'EUR' },
    amenities: ['wifi', 'kitchen', 'air_conditioning'],
    photos: [
      { url: 'https://images.example.com/a.jpg', position: 0 },
      { url: 'https://images.example.com/b.jpg', position: 1 },
    ],
    check_in_time: '15:00',
    check_out_time: '11:00',
    status: 'listed',
  };
}

/** Only the required fields (docs/contract-gaps.md "required property fields"). */
export function minimalProperty(): Record<string, unknown> {
  return {
    name: 'Bare room',
    property_type: 'room',
    address: { line1: '2 Rua Nova', city: 'Porto', country: 'PT', latitude: 41.15, longitude: -8.61 },
    occupancy: { max_guests: 1, bedrooms: 0, beds: 1, bathrooms: 0 },
    check_in_time: '14:00',
    check_out_time: '10:00',
    status: 'unlisted',
  };
}

export function validBlock(): Record<string, unknown> {
  return { listing_id: 'lst_0001', check_in: '2027-03-01', check_out: '2027-03-04', reason: 'maintenance' };
}

export function validEndpoint(): Record<string, unknown> {
  return { url: 'https://hooks.example.com/psync', events: ['booking.confirmed', 'user.erased'] };
}
