-- invariant.sql: units sold, tickets issued and units paid by confirmed payments; all three must match.
-- A unit is a seat or one of an item's quantity: sold counts sold seats and the items' bucket
-- counters, tickets one row per unit, paid the seats and item quantities of the confirmed holds.
-- Params: $1 event id
SELECT
  (SELECT count(*)::int FROM seats WHERE event_id = $1 AND status = 'sold')
    + (SELECT coalesce(sum(sold), 0)::int FROM item_buckets WHERE event_id = $1) AS sold,
  (SELECT count(*)::int FROM tickets WHERE event_id = $1) AS tickets,
  (SELECT coalesce(sum(cardinality(h.seats)
                       + (SELECT coalesce(sum(hi.quantity), 0) FROM hold_items hi WHERE hi.hold_id = h.id)), 0)::int
     FROM payments p JOIN holds h ON h.id = p.hold_id
    WHERE h.event_id = $1 AND p.status = 'confirmed') AS paid
