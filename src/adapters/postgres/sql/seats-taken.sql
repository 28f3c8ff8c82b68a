-- seats-taken.sql: which of the asked-for seats are not free now (held and unexpired, or sold).
-- Params: $1 event id, $2 seats (text[])
SELECT seat FROM seats
WHERE event_id = $1 AND seat = ANY ($2::text[])
  AND (status = 'sold' OR (status = 'held' AND hold_expires_at > now()))
ORDER BY seat
