-- stock-snapshot.sql: what an event has, for rebuilding the claim gate (src/ports/claim-gate.ts):
-- every unit with its capacity and how many are sold, and the live holds (active and unexpired on
-- the database's clock) with the units they claim. Seats are units "seat:<name>" of capacity 1;
-- counted items are units "item:<key>" whose capacity is the item's total, sold summed over its buckets.
-- Params: $1 event id
SELECT json_build_object(
  'units', (
    SELECT coalesce(json_agg(u), '[]'::json) FROM (
      SELECT json_build_object('unit', 'seat:' || seat, 'capacity', 1, 'sold', (status = 'sold')::int) AS u
      FROM seats WHERE event_id = $1
      UNION ALL
      SELECT json_build_object('unit', 'item:' || i.item, 'capacity', i.total, 'sold',
               (SELECT coalesce(sum(b.sold), 0)::int FROM item_buckets b WHERE b.event_id = i.event_id AND b.item = i.item))
      FROM items i WHERE i.event_id = $1) units),
  'holds', (
    SELECT coalesce(json_agg(json_build_object(
      'id', h.id,
      'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000)::bigint,
      'units', (
        SELECT coalesce(json_agg(u), '[]'::json) FROM (
          SELECT json_build_object('unit', 'seat:' || s, 'quantity', 1) AS u FROM unnest(h.seats) AS s
          UNION ALL
          SELECT json_build_object('unit', 'item:' || hi.item, 'quantity', sum(hi.quantity)::int)
          FROM hold_items hi WHERE hi.hold_id = h.id AND hi.status = 'held'
          GROUP BY hi.item) units))), '[]'::json)
    FROM holds h
    WHERE h.event_id = $1 AND h.status = 'active' AND h.expires_at > now())
) AS snapshot
