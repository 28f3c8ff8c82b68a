-- hold.sql: one hold, all or nothing, in one statement: see anteroom_hold in migrations/002.
-- Params: $1 event id, $2 holder, $3 seats (text[]), $4 hold id, $5 lock_timeout (e.g. '2000ms'),
--         $6 how many nearest free seats to offer when a seat is taken
SELECT anteroom_hold($1, $2, $3::text[], $4, $5, $6) AS result
