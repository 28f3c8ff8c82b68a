-- 002_hold_function.sql: the whole hold as one statement, so a claim costs one round trip.
-- anteroom_hold(event, holder, seats, hold id, lock timeout, how many nearest seats) returns
--   {"kind": "held", "expires_at": ...} | {"kind": "taken", "taken": [...], "nearest": [...]}
--   | {"kind": "limit", "limit": n, "current": n} | {"kind": "unknown-seats", "unknown": [...]}
--   | {"kind": "no-event"}
-- Steps, all in the caller's single-statement transaction:
--   1. lock the visitor's row, so one visitor's concurrent claims take turns (no write skew on the
--      per-visitor limit), and count their live holds and purchases;
--   2. lock the claimable seats in seat order (plainly taken ones are not locked; seat order means
--      claims of several seats in any order cannot deadlock) and set them held where they are free
--      or their hold expired on now() (Read Committed re-checks after a wait);
--   3. all or nothing: fewer rows than asked raises inside a sub-block, which undoes the partial
--      claim, and the answer names the taken seats and the nearest free ones.
CREATE FUNCTION anteroom_hold(p_event text, p_holder text, p_seats text[], p_hold uuid, p_lock_timeout text, p_nearest integer)
RETURNS jsonb
LANGUAGE plpgsql
AS $fn$
DECLARE
  v_max integer;
  v_seconds integer;
  v_unknown text[];
  v_current integer;
  v_claimed text[] := '{}';
  v_expires timestamptz;
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

  INSERT INTO visitors (event_id, holder) VALUES (p_event, p_holder)
  ON CONFLICT (event_id, holder) DO UPDATE SET touched_at = now();
  SELECT count(*) INTO v_current FROM seats
  WHERE event_id = p_event AND holder = p_holder
    AND (status = 'sold' OR (status = 'held' AND hold_expires_at > now()));
  IF v_current + cardinality(p_seats) > v_max THEN
    RETURN jsonb_build_object('kind', 'limit', 'limit', v_max, 'current', v_current);
  END IF;

  v_expires := now() + make_interval(secs => v_seconds);
  BEGIN
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
    INSERT INTO holds (id, event_id, holder, seats, expires_at) VALUES (p_hold, p_event, p_holder, p_seats, v_expires);
  EXCEPTION WHEN SQLSTATE 'AR001' THEN
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
  END;
  RETURN jsonb_build_object('kind', 'held', 'expires_at', v_expires);
END
$fn$
