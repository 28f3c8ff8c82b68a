-- tickets-issue.sql: one ticket per sold seat; UNIQUE (event_id, seat) is the net beneath the claim.
-- Params: $1 event id, $2 seats (text[]), $3 holder, $4 hold id, $5 payment key
INSERT INTO tickets (event_id, seat, holder, hold_id, payment_key)
SELECT $1, seat, $3, $4, $5 FROM unnest($2::text[]) AS seat
RETURNING id, seat
