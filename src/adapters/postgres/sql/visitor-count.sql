-- visitor-count.sql: seats the visitor holds (unexpired) or bought, against the per-visitor limit.
-- Params: $1 event id, $2 holder
SELECT count(*)::int AS n
FROM seats
WHERE event_id = $1 AND holder = $2
  AND (status = 'sold' OR (status = 'held' AND hold_expires_at > now()))
