-- event-create.sql: creates an event if it does not exist yet.
-- Params: $1 id, $2 name, $3 room, $4 price in cents, $5 hold seconds, $6 most seats per visitor
INSERT INTO events (id, name, room, price_cents, hold_seconds, max_per_visitor)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO NOTHING
