-- seat-map.sql: every seat of an event as free, held or sold. Expiry is derived on read: a hold
-- past its expiry shows as free whether or not the sweeper has run.
-- Params: $1 event id
SELECT seat, row_label, number,
       CASE WHEN status = 'held' AND hold_expires_at <= now() THEN 'free' ELSE status END AS status
FROM seats
WHERE event_id = $1
ORDER BY row_label, number
