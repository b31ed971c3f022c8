-- A booking keeps the check-in and check-out times it was confirmed with, so the
-- calendar's read-back (GetBooking) holds every field of a booking.confirmed delivery:
-- notifications builds a delivery from the booking as the calendar reads it back, never
-- from the event on the bus (docs/notifications.md "Events are proven by their owner").
--
-- Expand only: the columns stay nullable. confirm_booking (functions/confirm_booking.sql,
-- version 3) fills them from the BookingConfirmed it writes, for this release and for the
-- previous one, which calls the same function; bookings confirmed earlier take them from
-- their booking_confirmed event where the event log still holds its plain body.

set local lock_timeout = '5s';

alter table bookings add column check_in_time text;
alter table bookings add column check_out_time text;

update bookings b set check_in_time = e.body->>'check_in_time', check_out_time = e.body->>'check_out_time'
from events e
where e.booking_reference = b.booking_reference and e.type = 'booking_confirmed' and e.body is not null
  and b.check_in_time is null;
