-- release-items.sql: gives a visitor's held item units back (expired ones too, unless another claim
-- took them back first). The hold's buckets are locked first, in the order every claim uses.
-- Params: $1 hold id, $2 holder
WITH locked AS (
  SELECT b.event_id, b.item, b.bucket
  FROM item_buckets b JOIN hold_items h USING (event_id, item, bucket)
  WHERE h.hold_id = $1 AND h.holder = $2 AND h.status = 'held'
  ORDER BY b.item COLLATE "C", b.bucket
  FOR UPDATE OF b
), gone AS (
  UPDATE hold_items h SET status = 'released'
  FROM locked l
  WHERE h.hold_id = $1 AND h.holder = $2 AND h.status = 'held'
    AND h.event_id = l.event_id AND h.item = l.item AND h.bucket = l.bucket
  RETURNING h.event_id, h.item, h.bucket, h.quantity
), back AS (
  UPDATE item_buckets b SET held = b.held - g.quantity
  FROM gone g
  WHERE b.event_id = g.event_id AND b.item = g.item AND b.bucket = g.bucket
  RETURNING b.item
)
SELECT item, sum(quantity)::int AS quantity FROM gone GROUP BY item ORDER BY item COLLATE "C"
