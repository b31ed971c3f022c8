/**
 * Calendar: a month of one listing's nights (`GET /v1/listings/{id}/nights`), each free,
 * the partner's block, a marketplace booking or a live hold. The grid follows the ARIA
 * grid pattern: one cell in the tab order, arrow keys move between days, Enter opens a
 * night's details (a block's come from `GET /v1/blocks` over that night).
 */
import { useState } from 'preact/hooks';
import type { ListingNight, StoredProperty } from '../../../packages/partner-sdk/src/types';
import { useConsole } from '../context';
import { useField } from '../field';
import { useLoad } from '../load';
import { addMonths, datesOf, monthOf, monthTitle, parseMonth, WEEKDAYS, weeksOf } from '../month';
import { href, type Route } from '../route';
import { ErrorNote, HeadRow, Loading } from '../ui';
import { ListingOptions, useListings } from './listings';
import { NightDetails } from './night-details';

function nightLabel(n: ListingNight | undefined): string {
  if (!n) return '';
  switch (n.state) {
    case 'blocked':
      return n.external_uid ?? 'block';
    case 'booked':
      return `${n.booking_reference ?? 'booking'}${n.withdrawn ? ' (withdrawn)' : ''}`;
    case 'held':
      return 'hold';
    default:
      return 'free';
  }
}

function MonthGrid({ month, nights, selected, onSelect }: { month: string; nights: Map<string, ListingNight>; selected: string | undefined; onSelect: (d: string) => void }) {
  const weeks = weeksOf(month);
  const dates = datesOf(month);
  const [focus, setFocus] = useState(selected ?? dates[0]!);
  const active = dates.includes(focus) ? focus : dates[0]!;

  function move(e: KeyboardEvent, date: string) {
    const i = dates.indexOf(date);
    const step: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -7, ArrowDown: 7, Home: -(i % 7), End: 6 - (i % 7) };
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      onSelect(date);
      return;
    }
    const d = step[e.key];
    if (d === undefined) return;
    e.preventDefault();
    const next = dates[Math.min(dates.length - 1, Math.max(0, i + d))]!;
    setFocus(next);
    document.querySelector<HTMLElement>(`[data-date="${next}"]`)?.focus();
  }

  return (
    <table role="grid" class="calendar" aria-label={`Nights of ${monthTitle(month)}`}>
      <HeadRow cols={WEEKDAYS} />
      <tbody>
        {weeks.map((week, w) => (
          <tr key={w}>
            {week.map((date, i) =>
              date === null ? (
                <td key={`pad-${i}`} class="pad" />
              ) : (
                <td
                  key={date}
                  role="gridcell"
                  data-date={date}
                  data-state={nights.get(date)?.state ?? 'free'}
                  class={`night ${nights.get(date)?.state ?? 'free'}`}
                  tabIndex={date === active ? 0 : -1}
                  aria-selected={date === selected}
                  onClick={() => {
                    setFocus(date);
                    onSelect(date);
                  }}
                  onKeyDown={(e) => move(e, date)}
                >
                  <span class="day">{Number(date.slice(8))}</span>
                  <span class="what">{nightLabel(nights.get(date))}</span>
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ListingMonthForm({ listing, month, choices }: { listing: string; month: string; choices: StoredProperty[] }) {
  const chosen = useField(listing);
  const shown = useField(month);
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        window.location.hash = href(['calendar'], { listing: chosen.value, month: parseMonth(shown.value) ?? month });
      }}
    >
      <label for="listing">Listing</label>
      <select id="listing" {...chosen}>
        <option value="">Choose a listing</option>
        <ListingOptions choices={choices} />
        {listing && !choices.some((p) => p.listing_id === listing) && <option value={listing}>{listing}</option>}
      </select>
      <label for="month">Month</label>
      <input id="month" type="month" {...shown} />
      <button type="submit">Show</button>
    </form>
  );
}

export function CalendarPage({ route }: { route: Route }) {
  const { api } = useConsole();
  const listing = route.query.get('listing') ?? '';
  const month = parseMonth(route.query.get('month')) ?? monthOf(new Date());
  const [selected, setSelected] = useState<string | undefined>();
  const { loaded: listings, choices } = useListings();
  const nights = useLoad(
    async () => (listing ? await api((c) => c.listListingNights(listing, { from: `${month}-01`, to: `${addMonths(month, 1)}-01` })) : undefined),
    [listing, month],
  );
  const byDate = new Map((nights.data?.items ?? []).map((n) => [n.date, n]));

  return (
    <>
      <h1>Calendar</h1>
      <ListingMonthForm listing={listing} month={month} choices={choices} key={`${listing}:${month}`} />
      <ErrorNote error={listings.error} />
      {listing && (
        <>
          <div class="month-nav">
            <a href={href(['calendar'], { listing, month: addMonths(month, -1) })}>Previous month</a>
            <h2 aria-live="polite">{monthTitle(month)}</h2>
            <a href={href(['calendar'], { listing, month: addMonths(month, 1) })}>Next month</a>
          </div>
          <ul class="legend" aria-label="Legend">
            <li class="night free">free</li>
            <li class="night blocked">your block</li>
            <li class="night booked">marketplace booking</li>
            <li class="night held">live hold</li>
          </ul>
          {nights.loading && <Loading what="nights" />}
          <ErrorNote error={nights.error} />
          {nights.data && <MonthGrid month={month} nights={byDate} selected={selected} onSelect={setSelected} />}
          {selected?.startsWith(month) && nights.data && <NightDetails listing={listing} date={selected} night={byDate.get(selected)} />}
        </>
      )}
    </>
  );
}
