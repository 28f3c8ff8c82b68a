-- stock-snapshot.sql: what an event has, for rebuilding the claim gate (src/ports/claim-gate.ts):
-- every unit with its capacity and how many are sold, and the live holds (active and unexpired on
-- the database's clock) with the units they claim. Seats are units "seat:<name>" of capacity 1.
-- Params: $1 event id
SELECT json_build_object(
  'units', (
    SELECT coalesce(json_agg(json_build_object('unit', 'seat:' || seat, 'capacity', 1, 'sold', (status = 'sold')::int)), '[]'::json)
    FROM seats WHERE event_id = $1),
  'holds', (
    SELECT coalesce(json_agg(json_build_object(
      'id', h.id,
      'expiresAt', floor(extract(epoch FROM h.expires_at) * 1000)::bigint,
      'units', (SELECT coalesce(json_agg(json_build_object('unit', 'seat:' || s, 'quantity', 1)), '[]'::json) FROM unnest(h.seats) AS s))), '[]'::json)
    FROM holds h
    WHERE h.event_id = $1 AND h.status = 'active' AND h.expires_at > now())
) AS snapshot
