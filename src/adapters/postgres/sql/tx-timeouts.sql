-- tx-timeouts.sql: the current transaction's lock and statement timeouts, in one round trip.
-- Params: $1 lock_timeout (e.g. '2000ms'), $2 statement_timeout
SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)
