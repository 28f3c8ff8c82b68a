-- hold-get.sql: one hold, with whether it is still live on the database's clock.
-- Params: $1 hold id
SELECT h.id, h.event_id, h.holder, h.seats, h.expires_at, h.status,
       (h.status = 'active' AND h.expires_at > now()) AS live,
       e.price_cents, e.room
FROM holds h JOIN events e ON e.id = h.event_id
WHERE h.id = $1
