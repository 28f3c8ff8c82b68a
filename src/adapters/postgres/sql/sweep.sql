-- sweep.sql: housekeeping only: frees seats whose hold expired. Nothing depends on it having run.
-- Params: $1 most seats to free in one go
WITH expired AS (
  SELECT event_id, seat FROM seats
  WHERE status = 'held' AND hold_expires_at <= now()
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE seats s
SET status = 'free', holder = NULL, hold_id = NULL, hold_expires_at = NULL
FROM expired e
WHERE s.event_id = e.event_id AND s.seat = e.seat
RETURNING s.seat
