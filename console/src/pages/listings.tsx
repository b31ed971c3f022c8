/**
 * The workspace's listings for a chooser (Calendar, test events): the properties that
 * have a marketplace listing, from the first page of `GET /v1/properties` (200, the
 * largest page).
 */
import type { StoredProperty } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { type Loaded, useLoad } from '../load';

export interface Listings {
  loaded: Loaded<unknown>;
  /** Properties with a `listing_id`. */
  choices: StoredProperty[];
}

export function useListings(): Listings {
  const { api } = useConsole();
  const loaded = useLoad(() => api((c) => c.listProperties({ page_size: 200 })), []);
  return { loaded, choices: (loaded.data?.items ?? []).filter((p) => p.listing_id) };
}

/** One `<option>` per listing, named by its property. */
export function ListingOptions({ choices }: { choices: StoredProperty[] }) {
  return (
    <>
      {choices.map((p) => (
        <option key={p.listing_id} value={p.listing_id!}>
          {p.provider_id} ({p.listing_id})
        </option>
      ))}
    </>
  );
}
