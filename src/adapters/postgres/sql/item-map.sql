-- item-map.sql: every counted item of an event with its total and how many units are free, held and
-- sold. Expiry is derived on read: units of a hold past its expiry count as free whether or not they
-- have been taken back yet.
-- Params: $1 event id
SELECT i.item, i.name, i.total, b.sold, b.held - coalesce(x.expired, 0) AS held
FROM items i
CROSS JOIN LATERAL (
  SELECT coalesce(sum(sold), 0)::int AS sold, coalesce(sum(held), 0)::int AS held
  FROM item_buckets WHERE event_id = i.event_id AND item = i.item) b
CROSS JOIN LATERAL (
  SELECT sum(quantity)::int AS expired FROM hold_items
  WHERE event_id = i.event_id AND item = i.item AND status = 'held' AND expires_at <= now()) x
WHERE i.event_id = $1
ORDER BY i.item COLLATE "C"
