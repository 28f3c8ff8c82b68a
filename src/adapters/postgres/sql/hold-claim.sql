-- hold-claim.sql: claims the seats that are free or whose hold has expired, all in one statement.
-- Seats that are plainly taken are not even locked; the claimable ones are locked in seat order, so
-- claims of several seats in any order cannot deadlock, and after a wait Read Committed re-checks
-- the condition on the newest row version. The caller compares the rows returned with the seats
-- asked for and rolls back unless all were claimed.
-- Params: $1 event id, $2 seats (text[]), $3 holder, $4 hold id, $5 hold seconds
WITH wanted AS (
  SELECT seat FROM seats
  WHERE event_id = $1 AND seat = ANY ($2::text[])
    AND (status = 'free' OR (status = 'held' AND hold_expires_at <= now()))
  ORDER BY seat
  FOR UPDATE
)
UPDATE seats s
SET status = 'held', holder = $3, hold_id = $4, hold_expires_at = now() + make_interval(secs => $5)
FROM wanted w
WHERE s.event_id = $1 AND s.seat = w.seat
  AND (s.status = 'free' OR (s.status = 'held' AND s.hold_expires_at <= now()))
RETURNING s.seat
