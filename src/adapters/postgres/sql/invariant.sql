-- invariant.sql: seats sold, tickets issued and seats paid by confirmed payments; all three must match.
-- Params: $1 event id
SELECT
  (SELECT count(*)::int FROM seats WHERE event_id = $1 AND status = 'sold') AS sold,
  (SELECT count(*)::int FROM tickets WHERE event_id = $1) AS tickets,
  (SELECT coalesce(sum(cardinality(h.seats)), 0)::int
     FROM payments p JOIN holds h ON h.id = p.hold_id
    WHERE h.event_id = $1 AND p.status = 'confirmed') AS paid
