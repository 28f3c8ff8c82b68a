-- hold-insert.sql: records a hold that hold-claim.sql made, with the same expiry.
-- Params: $1 hold id, $2 event id, $3 holder, $4 seats (text[]), $5 hold seconds
INSERT INTO holds (id, event_id, holder, seats, expires_at)
VALUES ($1, $2, $3, $4::text[], now() + make_interval(secs => $5))
RETURNING id, event_id, holder, seats, expires_at, status
