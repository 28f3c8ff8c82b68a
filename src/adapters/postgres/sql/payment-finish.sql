-- payment-finish.sql: records how a checkout ended and the answer to replay for its key, once: only a
-- pending payment is written, so when two requests for one key both finish, the first answer stays.
-- Params: $1 idempotency key, $2 status, $3 charge id (or null), $4 HTTP status, $5 response (json)
UPDATE payments
SET status = $2, charge_id = $3, response_status = $4, response = $5::jsonb, updated_at = now()
WHERE idempotency_key = $1 AND status = 'pending'
