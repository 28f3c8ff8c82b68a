-- book-seats.sql: sells the held seats, only while the hold is still this visitor's and unexpired.
-- The caller checks that every seat of the hold came back, else rolls back: the hold was lost.
-- Params: $1 event id, $2 hold id, $3 holder
UPDATE seats
SET status = 'sold', hold_expires_at = NULL
WHERE event_id = $1 AND hold_id = $2 AND holder = $3
  AND status = 'held' AND hold_expires_at > now()
RETURNING seat
