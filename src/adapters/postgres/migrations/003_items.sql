-- 003_items.sql: counted stock. Besides numbered seats, an event may sell items counted by quantity
-- (a room type on one night, a general-admission tier): items, the buckets their stock is split
-- into, the items each hold claims, and tickets for item units.
--
-- An item's stock lives in `buckets` rows of item_buckets whose capacities add up to the item's total
-- (the seed splits the total evenly and never changes it). A claim, a confirm or a release changes a
-- bucket's counters only while holding that bucket's row lock, and the CHECK below is the net beneath
-- them: no bucket ever has more units held and sold than its capacity, so an item can never have more
-- than its total held and sold. One bucket (the default) is one lane; several spread a hot item's
-- claims over several rows (see anteroom_take in 004).

CREATE TABLE items (
  event_id text    NOT NULL REFERENCES events (id),
  -- The item's key, as clients name it ("night-12", "ga").
  item     text    NOT NULL,
  name     text    NOT NULL,
  total    integer NOT NULL CHECK (total >= 0),
  buckets  integer NOT NULL CHECK (buckets BETWEEN 1 AND 64),
  PRIMARY KEY (event_id, item)
);

CREATE TABLE item_buckets (
  event_id     text    NOT NULL,
  item         text    NOT NULL,
  bucket       integer NOT NULL CHECK (bucket >= 0),
  capacity     integer NOT NULL CHECK (capacity >= 0),
  -- Units of hold_items rows in status 'held' here, live or past their expiry: an expired hold's units
  -- are taken back lazily, by the claim that needs them or by the sweeper (never needed for correctness).
  held         integer NOT NULL DEFAULT 0,
  sold         integer NOT NULL DEFAULT 0,
  -- This bucket's ticket numbers are first_serial .. first_serial + capacity - 1 (disjoint per bucket).
  first_serial integer NOT NULL CHECK (first_serial >= 1),
  PRIMARY KEY (event_id, item, bucket),
  FOREIGN KEY (event_id, item) REFERENCES items (event_id, item),
  CHECK (held >= 0 AND sold >= 0 AND held + sold <= capacity)
);

-- What a hold claims of each item, per bucket (a claim may take its quantity from several buckets).
-- Rows are never deleted: 'held' (counted in the bucket's held), then 'sold' (confirmed), 'released'
-- (given back) or 'expired' (taken back after its expiry).
CREATE TABLE hold_items (
  -- Checked at commit: a claim writes its hold row last, once everything it asked for is taken.
  hold_id    uuid        NOT NULL REFERENCES holds (id) DEFERRABLE INITIALLY DEFERRED,
  event_id   text        NOT NULL,
  item       text        NOT NULL,
  bucket     integer     NOT NULL,
  holder     text        NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity > 0),
  -- The hold's expiry (holds.expires_at), here so that lazy expiry needs no join.
  expires_at timestamptz NOT NULL,
  status     text        NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'sold', 'released', 'expired')),
  PRIMARY KEY (hold_id, item, bucket),
  FOREIGN KEY (event_id, item, bucket) REFERENCES item_buckets (event_id, item, bucket)
);
-- Expired units still counted as held: found from the oldest, without reading the live ones.
CREATE INDEX hold_items_due ON hold_items (event_id, item, expires_at) WHERE status = 'held';
-- A visitor's units, for the per-visitor limit.
CREATE INDEX hold_items_holder ON hold_items (event_id, holder);

-- One ticket per unit: a seat ticket names its seat, an item ticket its item and its number. As
-- UNIQUE (event_id, seat) is for seats, UNIQUE (event_id, item, serial) is the net beneath item sales.
ALTER TABLE tickets ALTER COLUMN seat DROP NOT NULL;
ALTER TABLE tickets ADD COLUMN item text;
ALTER TABLE tickets ADD COLUMN serial integer;
ALTER TABLE tickets ADD CONSTRAINT tickets_seat_or_item
  CHECK ((seat IS NOT NULL AND item IS NULL AND serial IS NULL) OR (seat IS NULL AND item IS NOT NULL AND serial IS NOT NULL));
ALTER TABLE tickets ADD CONSTRAINT tickets_item_serial UNIQUE (event_id, item, serial);
