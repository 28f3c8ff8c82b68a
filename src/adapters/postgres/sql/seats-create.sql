-- seats-create.sql: adds the seats of rows × numbers (A1, A2, ...), skipping seats that exist.
-- Params: $1 event id, $2 row labels (text[]), $3 seats per row
INSERT INTO seats (event_id, seat, row_label, number)
SELECT $1, r || n, r, n FROM unnest($2::text[]) AS r, generate_series(1, $3) AS n
ON CONFLICT (event_id, seat) DO NOTHING
