/** The details of one night of the calendar; a block's from `GET /v1/blocks` over that night. */
import type { ListingNight } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useLoad } from '../load';
import { ErrorNote, Loading } from '../ui';

export function NightDetails({ listing, date, night }: { listing: string; date: string; night: ListingNight | undefined }) {
  const { api } = useConsole();
  const uid = night?.state === 'blocked' ? night.external_uid : undefined;
  const block = useLoad(async () => {
    if (!uid) return undefined;
    // The blocks holding this night (`to` is inclusive) across the workspace's listings,
    // page after page until this one (usually one request).
    return api(async (c) => {
      for await (const b of c.blocks({ from: date, to: date, page_size: 200 })) if (b.external_uid === uid && b.listing_id === listing) return b;
      return undefined;
    });
  }, [uid, listing, date]);

  return (
    <section class="details" aria-label={`Night of ${date}`}>
      <h2>Night of {date}</h2>
      <dl class="summary">
        <dt>State</dt>
        <dd>{night?.state ?? 'free'}</dd>
        {night?.state === 'booked' && (
          <>
            <dt>Booking reference</dt>
            <dd>
              <code>{night.booking_reference}</code>
            </dd>
            <dt>Withdrawn</dt>
            <dd>{night.withdrawn ? 'yes: cancelled by the host, the night stays taken' : 'no'}</dd>
          </>
        )}
        {night?.state === 'held' && (
          <>
            <dt>Hold</dt>
            <dd>A guest is checking out on the marketplace; the hold ends in minutes unless it becomes a booking.</dd>
          </>
        )}
      </dl>
      {uid && (
        <>
          <h3>
            Block <code>{uid}</code>
          </h3>
          {block.loading && <Loading what="the block" />}
          <ErrorNote error={block.error} />
          {block.data && (
            <dl class="summary" data-testid="block-details">
              <dt>External uid</dt>
              <dd>
                <code>{block.data.external_uid}</code>
              </dd>
              <dt>Check-in</dt>
              <dd>{block.data.check_in}</dd>
              <dt>Check-out</dt>
              <dd>{block.data.check_out}</dd>
              <dt>Nights</dt>
              <dd>{block.data.nights}</dd>
              <dt>Reason</dt>
              <dd>{block.data.reason}</dd>
            </dl>
          )}
        </>
      )}
    </section>
  );
}
