-- hold-release.sql: gives a visitor's held seats back.
-- Params: $1 hold id, $2 holder
UPDATE seats
SET status = 'free', holder = NULL, hold_id = NULL, hold_expires_at = NULL
WHERE hold_id = $1 AND holder = $2 AND status = 'held'
RETURNING seat
