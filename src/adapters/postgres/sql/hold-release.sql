-- hold-release.sql: gives a visitor's held seats back; returns them in seat order (an UPDATE's
-- RETURNING rows come in no defined order).
-- Params: $1 hold id, $2 holder
WITH freed AS (
  UPDATE seats
  SET status = 'free', holder = NULL, hold_id = NULL, hold_expires_at = NULL
  WHERE hold_id = $1 AND holder = $2 AND status = 'held'
  RETURNING seat
)
SELECT seat FROM freed ORDER BY seat
