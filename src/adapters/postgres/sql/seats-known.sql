-- seats-known.sql: which of the asked-for seats exist.
-- Params: $1 event id, $2 seats (text[])
SELECT seat FROM seats WHERE event_id = $1 AND seat = ANY ($2::text[])
