-- lane-batch.sql: one batch of an ordered lane's claims, all in one transaction (the statement's): see
-- anteroom_claim_batch in migrations/005. Claims already written (their hold exists) are answered again.
-- Params: $1 event id, $2 claims (JSON text: a list of {"id", "holder", "seats", "items"}, in the lane's order),
--         $3 lock_timeout (e.g. '2000ms'), $4 how many nearest free seats to offer when a seat is taken
SELECT anteroom_claim_batch($1, $2::text::jsonb, $3, $4) AS results
