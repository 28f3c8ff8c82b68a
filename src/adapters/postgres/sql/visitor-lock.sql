-- visitor-lock.sql: locks the visitor's row for this event until the transaction ends.
-- Params: $1 event id, $2 holder (visitor id)
INSERT INTO visitors (event_id, holder) VALUES ($1, $2)
ON CONFLICT (event_id, holder) DO UPDATE SET touched_at = now()
RETURNING holder
