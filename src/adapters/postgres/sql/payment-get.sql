-- payment-get.sql: a checkout by its Idempotency-Key.
-- Params: $1 idempotency key
SELECT idempotency_key, hold_id, holder, amount_cents, status, charge_id, response_status, response
FROM payments WHERE idempotency_key = $1
