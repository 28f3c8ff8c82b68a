-- event-list.sql: the ids of every event, for the gate's reconciler.
-- Params: none
SELECT id FROM events ORDER BY id
