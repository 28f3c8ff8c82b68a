-- hold-finish.sql: marks a visitor's active hold confirmed or released.
-- Params: $1 hold id, $2 new status, $3 holder
UPDATE holds SET status = $2 WHERE id = $1 AND holder = $3 AND status = 'active' RETURNING id
