-- payment-begin.sql: starts a checkout for an Idempotency-Key; no row back means the key was seen.
-- Params: $1 idempotency key, $2 hold id, $3 holder, $4 amount in cents
INSERT INTO payments (idempotency_key, hold_id, holder, amount_cents)
VALUES ($1, $2, $3, $4)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING idempotency_key
