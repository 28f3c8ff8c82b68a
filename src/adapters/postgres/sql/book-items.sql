-- book-items.sql: sells a hold's item units and issues one numbered ticket per unit, only while the
-- hold is still this visitor's and unexpired. The hold's buckets are locked first, in the order every
-- claim uses (item COLLATE "C", then bucket), so a confirm cannot deadlock with claims; each unit moves
-- from held to sold under its bucket's lock, and its ticket number comes from the bucket's own range
-- (first_serial + units sold before it). The caller checks that `sold` is the hold's whole quantity,
-- else rolls back: the hold was lost (expired, and maybe taken back by another claim).
-- Params: $1 hold id, $2 holder, $3 payment key
WITH locked AS (
  SELECT b.event_id, b.item, b.bucket
  FROM item_buckets b JOIN hold_items h USING (event_id, item, bucket)
  WHERE h.hold_id = $1
  ORDER BY b.item COLLATE "C", b.bucket
  FOR UPDATE OF b
), sold AS (
  UPDATE hold_items h SET status = 'sold'
  FROM locked l
  WHERE h.hold_id = $1 AND h.holder = $2 AND h.status = 'held' AND h.expires_at > now()
    AND h.event_id = l.event_id AND h.item = l.item AND h.bucket = l.bucket
  RETURNING h.event_id, h.item, h.bucket, h.quantity
), counted AS (
  UPDATE item_buckets b SET held = b.held - s.quantity, sold = b.sold + s.quantity
  FROM sold s
  WHERE b.event_id = s.event_id AND b.item = s.item AND b.bucket = s.bucket
  RETURNING b.event_id, b.item, s.quantity, b.first_serial + b.sold - s.quantity AS first
), issued AS (
  INSERT INTO tickets (event_id, item, serial, holder, hold_id, payment_key)
  SELECT c.event_id, c.item, c.first + k, $2, $1, $3
  FROM counted c, generate_series(0, c.quantity - 1) AS k
  RETURNING id, item, serial
)
SELECT (SELECT coalesce(sum(quantity), 0)::int FROM counted) AS sold,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'item', item, 'serial', serial) ORDER BY item, serial), '[]'::json) FROM issued) AS tickets
