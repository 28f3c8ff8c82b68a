-- items-create.sql: adds a counted item and its buckets (the total split as evenly as it goes, the
-- first buckets one unit larger), skipping an item that exists. Each bucket gets its own range of
-- ticket numbers, so the numbers of an item run 1 .. total.
-- Params: $1 event id, $2 item, $3 name, $4 total, $5 buckets
WITH created AS (
  INSERT INTO items (event_id, item, name, total, buckets)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (event_id, item) DO NOTHING
  RETURNING event_id, item, total, buckets
)
INSERT INTO item_buckets (event_id, item, bucket, capacity, first_serial)
SELECT c.event_id, c.item, b,
       c.total / c.buckets + (b < c.total % c.buckets)::int,
       b * (c.total / c.buckets) + least(b, c.total % c.buckets) + 1
FROM created c, generate_series(0, c.buckets - 1) AS b
