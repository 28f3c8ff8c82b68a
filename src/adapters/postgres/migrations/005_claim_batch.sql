-- 005_claim_batch.sql: a batch of claims decided by an ordered lane's allocator (src/booking/lane), written
-- in one statement, so in one transaction. anteroom_claim_batch(event, claims, lock timeout, how many
-- nearest seats at least), where claims is a JSON list of {"id", "holder", "seats", "items"} in the lane's order,
-- returns a JSON list of answers in the same order: what anteroom_claim (004) returns for each claim.
-- Each claim is written by anteroom_claim, the very conditional writes of a single claim: a batch can
-- no more oversell than a claim can, whatever the allocator believed. A claim whose hold (its id) exists
-- already was written by an earlier batch that committed before its allocator stopped: it is answered
-- from that hold and not claimed again, so replaying a batch after a crash is idempotent. Claims are
-- taken one after another in the list's order; each sees the writes of those before it.
CREATE FUNCTION anteroom_claim_batch(p_event text, p_claims jsonb, p_lock_timeout text, p_nearest integer)
RETURNS jsonb
LANGUAGE plpgsql
AS $fn$
DECLARE
  v_claim jsonb;
  v_expires timestamptz;
  v_holder text;
  v_out jsonb := '[]';
BEGIN
  FOR v_claim IN SELECT e.c FROM jsonb_array_elements(p_claims) WITH ORDINALITY AS e (c, ord) ORDER BY e.ord
  LOOP
    SELECT h.expires_at, h.holder INTO v_expires, v_holder FROM holds h WHERE h.id = (v_claim ->> 'id')::uuid;
    IF FOUND THEN
      v_out := v_out || jsonb_build_array(CASE WHEN v_holder = v_claim ->> 'holder'
        THEN jsonb_build_object('kind', 'held', 'expires_at', v_expires, 'again', true)
        ELSE jsonb_build_object('kind', 'conflict') END);
    ELSE
      v_out := v_out || jsonb_build_array(anteroom_claim(
        p_event,
        v_claim ->> 'holder',
        ARRAY(SELECT jsonb_array_elements_text(v_claim -> 'seats')),
        coalesce(v_claim -> 'items', '[]'::jsonb),
        (v_claim ->> 'id')::uuid,
        p_lock_timeout,
        greatest(p_nearest, jsonb_array_length(coalesce(v_claim -> 'seats', '[]'::jsonb)))));
    END IF;
  END LOOP;
  RETURN v_out;
END
$fn$;
