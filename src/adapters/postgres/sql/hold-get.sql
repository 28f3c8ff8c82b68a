-- hold-get.sql: one hold, with its items (summed over buckets) and whether it is still live on the
-- database's clock.
-- Params: $1 hold id
SELECT h.id, h.event_id, h.holder, h.seats, h.expires_at, h.status,
       (h.status = 'active' AND h.expires_at > now()) AS live,
       e.price_cents, e.room,
       (SELECT coalesce(json_agg(json_build_object('item', i.item, 'quantity', i.quantity) ORDER BY i.item COLLATE "C"), '[]'::json)
          FROM (SELECT item, sum(quantity)::int AS quantity FROM hold_items WHERE hold_id = h.id GROUP BY item) i) AS items
FROM holds h JOIN events e ON e.id = h.event_id
WHERE h.id = $1
