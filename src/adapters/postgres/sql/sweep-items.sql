-- sweep-items.sql: housekeeping only: takes back the units of expired item holds, in buckets nobody
-- has locked (SKIP LOCKED: it never waits, so it cannot deadlock). Claims take back what they need
-- themselves; nothing depends on this having run.
-- Params: $1 most buckets to visit in one go
WITH due AS (
  SELECT DISTINCT event_id, item, bucket FROM hold_items
  WHERE status = 'held' AND expires_at <= now()
  LIMIT $1
), locked AS (
  SELECT b.event_id, b.item, b.bucket
  FROM item_buckets b JOIN due USING (event_id, item, bucket)
  FOR UPDATE OF b SKIP LOCKED
), gone AS (
  UPDATE hold_items h SET status = 'expired'
  FROM locked l
  WHERE h.event_id = l.event_id AND h.item = l.item AND h.bucket = l.bucket
    AND h.status = 'held' AND h.expires_at <= now()
  RETURNING h.event_id, h.item, h.bucket, h.quantity
), back AS (
  UPDATE item_buckets b SET held = b.held - g.quantity
  FROM (SELECT event_id, item, bucket, sum(quantity)::int AS quantity FROM gone GROUP BY event_id, item, bucket) g
  WHERE b.event_id = g.event_id AND b.item = g.item AND b.bucket = g.bucket
  RETURNING b.bucket
)
SELECT coalesce(sum(quantity), 0)::int AS freed FROM gone
