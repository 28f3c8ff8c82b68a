-- seats-nearest.sql: free seats nearest to the asked-for ones (same row first, then by number).
-- Params: $1 event id, $2 seats asked for (text[]), $3 how many
WITH asked AS (SELECT row_label, number FROM seats WHERE event_id = $1 AND seat = ANY ($2::text[]))
SELECT s.seat
FROM seats s
WHERE s.event_id = $1
  AND (s.status = 'free' OR (s.status = 'held' AND s.hold_expires_at <= now()))
ORDER BY (SELECT min(abs(ascii(s.row_label) - ascii(a.row_label)) * 1000 + abs(s.number - a.number)) FROM asked a), s.seat
LIMIT $3
