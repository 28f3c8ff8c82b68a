-- event-get.sql: one event.
-- Params: $1 event id
SELECT id, name, room, price_cents, hold_seconds, max_per_visitor FROM events WHERE id = $1
