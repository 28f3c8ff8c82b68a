-- hold.sql: one hold of seats and items, all or nothing, in one statement: see anteroom_claim in
-- migrations/004 (the seats as anteroom_hold in 002 claimed them).
-- Params: $1 event id, $2 holder, $3 seats (text[]), $4 hold id, $5 lock_timeout (e.g. '2000ms'),
--         $6 how many nearest free seats to offer when a seat is taken, $7 items (JSON text: a list of {"item", "quantity"})
SELECT anteroom_claim($1, $2, $3::text[], $7::text::jsonb, $4, $5, $6) AS result
