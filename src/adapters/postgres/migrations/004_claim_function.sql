-- 004_claim_function.sql: one claim of seats and counted items, all or nothing, in one statement.
-- anteroom_claim(event, holder, seats, items, hold id, lock timeout, how many nearest seats), where
-- items is a JSON list of {"item", "quantity"}, returns what anteroom_hold (002) returns, plus
--   {"kind": "unknown-items", "unknown": [...]} | {"kind": "short", "short": [{"item", "wanted", "left"}]}
-- Steps, all in the caller's single-statement transaction:
--   1. unknown seats or items end the claim before anything is locked;
--   2. lock the visitor's row (one visitor's claims take turns) and count their live and sold units:
--      every seat and every unit of an item's quantity counts toward the event's max_per_visitor;
--   3. the seats exactly as in 002 (claimable ones locked in seat order), then each item in the order
--      of its key (COLLATE "C", the same everywhere) through anteroom_take, below;
--   4. any seat taken or item short raises inside a sub-block, which undoes the whole partial claim
--      and lets go of every lock it took; the answer names what was taken or short.
--
-- Why claims cannot deadlock. Every lock a claim waits for is taken in one global order: its own
-- visitor row, then seats by name, then items by key and, within an item, buckets by number; and a
-- claim only waits while every lock it already holds comes earlier in that order. The one exception is
-- the first pass over a bucketed item, which takes buckets in hashed order but with SKIP LOCKED, so
-- it never waits; if that pass cannot take the whole quantity it is rolled back (a sub-block), which
-- drops the out-of-order locks before the claim waits on any bucket of the item. A chain of waits
-- therefore climbs the order strictly and cannot close into a cycle. Confirms and releases
-- (book-items.sql, release-items.sql) lock a hold's buckets in the same (item, bucket) order, and the
-- sweeper only takes buckets with SKIP LOCKED.
--
-- Why it cannot oversell. Every change to a bucket's held and sold counters happens under that
-- bucket's row lock, on the row's current version (a later statement, or an UPDATE, sees every change
-- committed before the lock was granted), and CHECK (held + sold <= capacity) refuses any write that
-- would take more than the bucket has. The capacities of an item's buckets add up to its total, so
-- the units held and sold of an item never exceed the total, however claims spread over the buckets.

-- Takes back the units of expired holds in one bucket; the caller holds the bucket's row lock.
-- Returns how many units it took back.
CREATE FUNCTION anteroom_reclaim(p_event text, p_item text, p_bucket integer)
RETURNS integer
LANGUAGE sql
AS $fn$
  WITH gone AS (
    UPDATE hold_items SET status = 'expired'
    WHERE event_id = p_event AND item = p_item AND bucket = p_bucket AND status = 'held' AND expires_at <= now()
    RETURNING quantity
  ), back AS (
    UPDATE item_buckets SET held = held - (SELECT sum(quantity) FROM gone)
    WHERE event_id = p_event AND item = p_item AND bucket = p_bucket AND EXISTS (SELECT 1 FROM gone)
    RETURNING bucket
  )
  -- back runs although nothing reads it: a data-modifying WITH always runs to completion.
  SELECT coalesce((SELECT sum(quantity) FROM gone), 0)::integer
$fn$;

-- What each bucket of an item has left on the statement's snapshot, counting the units of expired
-- holds as free (no locks; claims re-check under the bucket's lock).
CREATE FUNCTION anteroom_stock(p_event text, p_item text)
RETURNS TABLE (bucket integer, free integer)
LANGUAGE sql STABLE
AS $fn$
  SELECT b.bucket,
         (b.capacity - b.sold - b.held + coalesce((
            SELECT sum(h.quantity) FROM hold_items h
            WHERE h.event_id = b.event_id AND h.item = b.item AND h.bucket = b.bucket
              AND h.status = 'held' AND h.expires_at <= now()), 0))::integer
  FROM item_buckets b
  WHERE b.event_id = p_event AND b.item = p_item
$fn$;

-- In one bucket whose row lock the caller holds: takes up to p_want units for the hold (taking back
-- expired holds' units first if the bucket has too few), and returns how many it took.
CREATE FUNCTION anteroom_put(p_event text, p_item text, p_bucket integer, p_want integer, p_hold uuid, p_holder text, p_expires timestamptz)
RETURNS integer
LANGUAGE plpgsql
AS $fn$
DECLARE
  v_free integer;
  v_take integer;
BEGIN
  SELECT capacity - sold - held INTO v_free FROM item_buckets
  WHERE event_id = p_event AND item = p_item AND bucket = p_bucket;
  IF v_free < p_want THEN
    v_free := v_free + anteroom_reclaim(p_event, p_item, p_bucket);
  END IF;
  v_take := least(p_want, v_free);
  IF v_take > 0 THEN
    UPDATE item_buckets SET held = held + v_take WHERE event_id = p_event AND item = p_item AND bucket = p_bucket;
    INSERT INTO hold_items (hold_id, event_id, item, bucket, holder, quantity, expires_at)
    VALUES (p_hold, p_event, p_item, p_bucket, p_holder, v_take, p_expires);
  END IF;
  RETURN v_take;
END
$fn$;

-- Claims p_quantity units of one item for the hold. Returns -1 when it took them all, otherwise how
-- many it could find (fewer than asked: the caller undoes whatever it took). The quantity may come
-- from several buckets: a bucket that has all of it is preferred, so a claim of 2 is split only when no
-- single bucket has 2 left, and a claim succeeds whenever the item as a whole has enough.
--   0. on the snapshot, fewer units left than asked: short at once, without a lock;
--   1. several buckets: try them without ever waiting (FOR UPDATE SKIP LOCKED), starting from the
--      bucket the hold id hashes to and going round, so concurrent claims spread over the rows;
--      whatever this pass locked is rolled back unless it took the whole quantity;
--   2. otherwise (one bucket, or the unlocked buckets had too little) take the buckets that have
--      stock in bucket order, waiting for each lock: a claim is only short when, under the locks, the
--      item has too little, never because a bucket was busy.
CREATE FUNCTION anteroom_take(p_event text, p_item text, p_quantity integer, p_hold uuid, p_holder text, p_expires timestamptz)
RETURNS integer
LANGUAGE plpgsql
AS $fn$
DECLARE
  v_n integer;
  v_start integer;
  v_need integer := p_quantity;
  v_bucket integer;
  v_left integer;
BEGIN
  SELECT coalesce(sum(free), 0) INTO v_left FROM anteroom_stock(p_event, p_item);
  IF v_left < p_quantity THEN
    RETURN v_left;
  END IF;
  SELECT buckets INTO v_n FROM items WHERE event_id = p_event AND item = p_item;
  IF v_n > 1 THEN
    v_start := ((hashtext(p_hold::text) % v_n) + v_n) % v_n;
    BEGIN
      FOR v_bucket IN
        SELECT s.bucket FROM anteroom_stock(p_event, p_item) s
        WHERE s.free > 0
        ORDER BY (s.free >= p_quantity) DESC, (s.bucket - v_start + v_n) % v_n
      LOOP
        PERFORM 1 FROM item_buckets
        WHERE event_id = p_event AND item = p_item AND bucket = v_bucket
        FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        v_need := v_need - anteroom_put(p_event, p_item, v_bucket, v_need, p_hold, p_holder, p_expires);
        IF v_need = 0 THEN
          RETURN -1;
        END IF;
      END LOOP;
      RAISE EXCEPTION 'the unlocked buckets have too little' USING ERRCODE = 'AR003';
    EXCEPTION WHEN SQLSTATE 'AR003' THEN
      v_need := p_quantity;
    END;
  END IF;
  FOR v_bucket IN
    SELECT s.bucket FROM anteroom_stock(p_event, p_item) s WHERE s.free > 0 ORDER BY s.bucket
  LOOP
    PERFORM 1 FROM item_buckets
    WHERE event_id = p_event AND item = p_item AND bucket = v_bucket
    FOR UPDATE;
    v_need := v_need - anteroom_put(p_event, p_item, v_bucket, v_need, p_hold, p_holder, p_expires);
    IF v_need = 0 THEN
      RETURN -1;
    END IF;
  END LOOP;
  RETURN p_quantity - v_need;
END
$fn$;

CREATE FUNCTION anteroom_claim(p_event text, p_holder text, p_seats text[], p_items jsonb, p_hold uuid, p_lock_timeout text, p_nearest integer)
RETURNS jsonb
LANGUAGE plpgsql
AS $fn$
DECLARE
  v_max integer;
  v_seconds integer;
  v_unknown text[];
  v_current integer;
  v_units integer;
  v_claimed text[] := '{}';
  v_expires timestamptz;
  v_claim record;
  v_left integer;
  v_short jsonb := '[]';
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout, true);
  SELECT max_per_visitor, hold_seconds INTO v_max, v_seconds FROM events WHERE id = p_event;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'no-event');
  END IF;
  SELECT coalesce(array_agg(w ORDER BY w), '{}') INTO v_unknown FROM unnest(p_seats) AS w
  WHERE NOT EXISTS (SELECT 1 FROM seats s WHERE s.event_id = p_event AND s.seat = w);
  IF cardinality(v_unknown) > 0 THEN
    RETURN jsonb_build_object('kind', 'unknown-seats', 'unknown', to_jsonb(v_unknown));
  END IF;
  -- Items are summed per name below (a name given twice counts once, with both quantities).
  SELECT coalesce(array_agg(DISTINCT c.item ORDER BY c.item), '{}') INTO v_unknown
  FROM jsonb_to_recordset(p_items) AS c (item text, quantity integer)
  WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.event_id = p_event AND i.item = c.item);
  IF cardinality(v_unknown) > 0 THEN
    RETURN jsonb_build_object('kind', 'unknown-items', 'unknown', to_jsonb(v_unknown));
  END IF;
  SELECT coalesce(sum(c.quantity), 0) INTO v_units FROM jsonb_to_recordset(p_items) AS c (item text, quantity integer);

  INSERT INTO visitors (event_id, holder) VALUES (p_event, p_holder)
  ON CONFLICT (event_id, holder) DO UPDATE SET touched_at = now();
  SELECT count(*) INTO v_current FROM seats
  WHERE event_id = p_event AND holder = p_holder
    AND (status = 'sold' OR (status = 'held' AND hold_expires_at > now()));
  v_current := v_current + coalesce((
    SELECT sum(quantity) FROM hold_items
    WHERE event_id = p_event AND holder = p_holder
      AND (status = 'sold' OR (status = 'held' AND expires_at > now()))), 0);
  IF v_current + cardinality(p_seats) + v_units > v_max THEN
    RETURN jsonb_build_object('kind', 'limit', 'limit', v_max, 'current', v_current);
  END IF;

  v_expires := now() + make_interval(secs => v_seconds);
  BEGIN
    IF cardinality(p_seats) > 0 THEN
      WITH wanted AS (
        SELECT seat FROM seats
        WHERE event_id = p_event AND seat = ANY (p_seats)
          AND (status = 'free' OR (status = 'held' AND hold_expires_at <= now()))
        ORDER BY seat
        FOR UPDATE
      ), claimed AS (
        UPDATE seats s
        SET status = 'held', holder = p_holder, hold_id = p_hold, hold_expires_at = v_expires
        FROM wanted w
        WHERE s.event_id = p_event AND s.seat = w.seat
          AND (s.status = 'free' OR (s.status = 'held' AND s.hold_expires_at <= now()))
        RETURNING s.seat
      )
      SELECT coalesce(array_agg(seat), '{}') INTO v_claimed FROM claimed;
      IF cardinality(v_claimed) <> cardinality(p_seats) THEN
        RAISE EXCEPTION 'not all seats are free' USING ERRCODE = 'AR001';
      END IF;
    END IF;
    FOR v_claim IN
      SELECT c.item, sum(c.quantity)::integer AS quantity
      FROM jsonb_to_recordset(p_items) AS c (item text, quantity integer)
      GROUP BY c.item
      ORDER BY c.item COLLATE "C"
    LOOP
      IF jsonb_array_length(v_short) = 0 THEN
        v_left := anteroom_take(p_event, v_claim.item, v_claim.quantity, p_hold, p_holder, v_expires);
      ELSE
        -- The claim has failed already: the other items are only looked at, on the snapshot.
        SELECT coalesce(sum(free), 0) INTO v_left FROM anteroom_stock(p_event, v_claim.item);
        IF v_left >= v_claim.quantity THEN
          v_left := -1;
        END IF;
      END IF;
      IF v_left >= 0 THEN
        v_short := v_short || jsonb_build_array(jsonb_build_object('item', v_claim.item, 'wanted', v_claim.quantity, 'left', v_left));
      END IF;
    END LOOP;
    IF jsonb_array_length(v_short) > 0 THEN
      RAISE EXCEPTION 'not enough of some items' USING ERRCODE = 'AR002';
    END IF;
    -- Last, as in 002: a claim that fails writes no hold (its items' rows refer to it, checked at commit).
    INSERT INTO holds (id, event_id, holder, seats, expires_at) VALUES (p_hold, p_event, p_holder, p_seats, v_expires);
  EXCEPTION
    WHEN SQLSTATE 'AR001' THEN
      RETURN jsonb_build_object(
        'kind', 'taken',
        'taken', to_jsonb(ARRAY(SELECT w FROM unnest(p_seats) AS w WHERE w <> ALL (v_claimed) ORDER BY w)),
        'nearest', to_jsonb(ARRAY(
          SELECT s.seat FROM seats s
          WHERE s.event_id = p_event
            AND (s.status = 'free' OR (s.status = 'held' AND s.hold_expires_at <= now()))
          ORDER BY (SELECT min(abs(ascii(s.row_label) - ascii(a.row_label)) * 1000 + abs(s.number - a.number))
                    FROM seats a WHERE a.event_id = p_event AND a.seat = ANY (p_seats)), s.seat
          LIMIT p_nearest)));
    WHEN SQLSTATE 'AR002' THEN
      RETURN jsonb_build_object('kind', 'short', 'short', v_short);
  END;
  RETURN jsonb_build_object('kind', 'held', 'expires_at', v_expires);
END
$fn$;

-- The seats-only claim of 002, for callers that still use it: now the same claim (so that it counts a
-- visitor's item units toward the limit too).
CREATE OR REPLACE FUNCTION anteroom_hold(p_event text, p_holder text, p_seats text[], p_hold uuid, p_lock_timeout text, p_nearest integer)
RETURNS jsonb
LANGUAGE sql
AS $fn$
  SELECT anteroom_claim(p_event, p_holder, p_seats, '[]'::jsonb, p_hold, p_lock_timeout, p_nearest)
$fn$;
