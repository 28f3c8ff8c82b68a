-- poll-12.lua: the polls of one or more visitors of a room, in one call: the Redis implementation of
-- the admission rule in src/core/admission.ts (pollRoom; the pace and grantBudget in core/pace.ts),
-- step for step and in the same order. Change both together; test/differential.test.ts compares them
-- on random sequences.
-- Each visitor joins or keeps their place; visitors who stopped polling leave; ended sessions free
-- their slots; the head of the line is admitted within the room's limits; each visitor gets an answer.
-- The edge batches the polls that arrive together, so one EVALSHA serves many visitors. The work is
-- O(log N) per visitor in the length of the line, plus what it admits or drops.
--
-- Input:
--   KEYS[1] q     zset    visitor -> arrival µs              (the line, FIFO by score)
--   KEYS[2] sweep zset    seen bucket -> when its oldest entry goes stale, ms
--   KEYS[3] act   zset    visitor -> session expiry ms        (admitted; an admission not yet
--                                                              collected expires abandonAfter after
--                                                              the visitor's last poll)
--   KEYS[4] adm   zset    "visitor:ms" -> admission ms        (the last 60 s: the rate window)
--   KEYS[5] stat  hash    abandoned, admitted (running totals); abn:<10-s bucket> -> visitors
--                         dropped in that bucket (the last minute's abandonment, for admins)
--   KEYS[6] last  string  the last arrival handed out, µs     (arrivals are unique and rising,
--                                                              so two visitors never tie)
--   KEYS[7] seen  prefix  of the seen buckets: KEYS[7] .. b, b = bucketOf(visitor) in 0..16383,
--                         each a small hash visitor -> last poll ms (waiting visitors only).
--                         Small hashes stay listpacks: ~30 B a visitor, where a sorted set takes ~120.
--   KEYS[8] used  zset    visitor -> until when an admission used up their place, ms (their queue
--                         token's arrival no longer restores it); kept an abandonAfter past that
--   KEYS[9] ended zset    visitor -> when an admin ended their session, ms (no place for them)
--   KEYS[10] pace string  the slot of the last admission on the room's timeline, µs (GCRA)
--   KEYS[11] life hash    epoch, born, recoverUntil, reserved, reservedUntil, seq (polls answered),
--                         outage and holdUntil (the latest outage an edge reported, holdLine), late
--                         and lateUntil (the most lateness an edge reported, lateSlack): the
--                         room's life in this store, a marker only a loss removes (beginLife in
--                         core/admission.ts); a life with fewer polls than an edge saw went back in time
--   KEYS[12] drawn zset   a scheduled room's draw: visitor -> drawn arrival µs (core/draw.ts), for
--                         everyone who got a drawn place; expires a week after the opening
--   ARGV[1] now ms, or "" to use Redis TIME                   (tests drive time; production doesn't)
--   ARGV[2] the room's admission limits, JSON by name (lib/limits.lua): mode (fifo | paused |
--           passthrough), totalActiveUsers, newUsersPerMinute, abandonAfterMs, sessionMs, and for a
--           scheduled room prequeueAtMs and opensAtMs
--   ARGV[3] what the polling edge knows, JSON: {"epoch": the life it saw or absent, "active": n,
--           "seq": the most polls it saw in that life, "outage": when it last failed to reach the store,
--           "late": how late it serves polls now, ms (core/lateness.ts), absent when it keeps up}
--   ARGV[4] the polls, packed into one string (so that the edge writes one argument, not five per
--           visitor): "<visitor>,<arrival>,<expires>,<draw>,<lane>;" per visitor, in order. The visitor
--           id; the arrival µs from a verified queue token or empty (it restores a place Redis forgot);
--           that token's expiry ms or empty (a token signed after the admission that used its place
--           up, or by the last poll before an absent grant, restores it if that admission lapsed:
--           Poll.tokenExpires in core/admission.ts); the
--           visitor's drawn arrival µs or empty (a scheduled room: the place a joiner takes during
--           the pre-queue); the arrival µs of an access code the visitor just redeemed or empty
--           (core/access.ts: it replaces a later place, or none). Visitor ids are never empty and
--           never hold "," or ";" (the edge checks, and checks that the answer has 4 numbers for each
--           poll it sent).
-- Output: one string of integers, each followed by ",": 4 per visitor, in input order: state
--   (1 queued, 2 admitted, 3 paused, 4 ended, 5 recovering, 6 prequeue), arrival µs, position
--   (queued) or session expiry ms (admitted) or 0, rank in the draw (0: none); then 6 for the call:
--   waiting, admitted in the last 60 s, now ms, and the room's life: epoch, born ms, seq. One string,
--   not an array of integers: the edge reads it in one pass, where ioredis decodes an array element
--   by element (a third of a poll's Redis cost in the edge). Written with %d, which keeps all 16
--   digits of a µs time (tostring would round it to 14).

-- #include lib/clock.lua
-- #include lib/limits.lua
-- #include lib/rule.lua

local q, sweep, act, adm, stat, last, seenPrefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local used, ended, pace, lifeKey, drawn = KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local limits = decodeLimits(ARGV[2])
local mode = limits.mode
local cap = limits.totalActiveUsers
local perMinute = limits.newUsersPerMinute
local abandonMs = limits.abandonAfterMs
local sessionMs = limits.sessionMs
local now, nowUs = clockNow(ARGV[1])
local hint = cjson.decode(ARGV[3])
local visitors, tokenArrivals, tokenExpiries, draws, lanes = {}, {}, {}, {}, {}
local count = 0
for v, a, e, d, l in string.gmatch(ARGV[4], '([^,;]+),([^,;]*),([^,;]*),([^,;]*),([^,;]*);') do
  count = count + 1
  visitors[count], tokenArrivals[count], tokenExpiries[count], draws[count] = v, tonumber(a), tonumber(e), tonumber(d)
  lanes[count] = tonumber(l)
end
-- A scheduled room: joiners take their drawn place during the pre-queue; nobody is admitted before the opening.
local opensAt = limits.opensAtMs or 0
local scheduled = opensAt > 0
local beforeOpening = now < opensAt
local prequeue = scheduled and beforeOpening and now >= (limits.prequeueAtMs or 0)
local opensAtUs = opensAt * 1000
local function isDrawn(arrival)
  return arrival < opensAtUs and arrival >= opensAtUs - DRAW_SPAN_US
end

-- Before anything: the room's life (beginLife). None although a visitor brings a token or the edge
-- saw one: the store forgot the room. Fewer polls than the edge saw in this life: the store went back
-- in time (a failover to a replica that missed writes). Either way a new life begins, recovering: no
-- admissions for two refreshes and a second, and the sessions that went missing stay reserved.
local life = redis.call('HMGET', lifeKey, 'recoverUntil', 'reserved', 'reservedUntil', 'epoch', 'born', 'seq')
local function recover(reserved, seq)
  local recoverUntil = now + recoveryMs(limits.refreshSeconds)
  redis.call('HSET', lifeKey, 'epoch', nowUs, 'born', now, 'recoverUntil', recoverUntil, 'reserved', reserved,
    'reservedUntil', now + sessionMs, 'seq', seq, 'outage', 0, 'holdUntil', 0, 'late', 0, 'lateUntil', 0)
  return { recoverUntil, reserved, now + sessionMs, nowUs, now, seq }
end
if not life[1] then
  local forgotten = hint.epoch ~= nil
  for i = 1, count do
    if tokenArrivals[i] then forgotten = true end
  end
  if forgotten then
    life = recover(hint.active, 0)
  else
    redis.call('HSET', lifeKey, 'epoch', nowUs, 'born', now, 'recoverUntil', 0, 'reserved', 0, 'reservedUntil', 0, 'seq', 0,
      'outage', 0, 'holdUntil', 0, 'late', 0, 'lateUntil', 0)
    life = { 0, 0, 0, nowUs, now, 0 }
  end
elseif hint.epoch ~= nil and hint.seq ~= nil and hint.epoch == tonumber(life[4]) and hint.seq > tonumber(life[6]) then
  life = recover(math.max(0, hint.active - redis.call('ZCARD', act)), hint.seq)
end
local seq = redis.call('HINCRBY', lifeKey, 'seq', 1)
local lifeEpoch, lifeBorn = tonumber(life[4]), tonumber(life[5])
local recovering = now < tonumber(life[1])
-- An edge that could not reach the store says so (hint.outage): the line is held for 1.5 refreshes,
-- nobody dropped for silence and nobody admitted, until everybody who kept polling is seen again
-- (holdLine in core/admission.ts).
local held = redis.call('HMGET', lifeKey, 'outage', 'holdUntil', 'late', 'lateUntil')
local holdUntil = tonumber(held[2] or '0')
if hint.outage ~= nil and hint.outage > tonumber(held[1] or '0') then
  local untilMs = now + collectWindowMs(limits.refreshSeconds)
  holdUntil = math.max(holdUntil, untilMs)
  redis.call('HSET', lifeKey, 'outage', hint.outage, 'holdUntil', holdUntil)
  -- Admissions that ran out meanwhile or are about to last until then too (before the expiries below).
  local soon = redis.call('ZRANGEBYSCORE', act, '-inf', untilMs, 'LIMIT', 0, MAX_EXTEND)
  for _, v in ipairs(soon) do redis.call('ZADD', act, untilMs, v) end
end
local holding = now < holdUntil
-- An edge that serves polls late says how late (hint.late): for abandonAfter after, the sweep allows
-- the most lateness reported (at most abandonAfter) on top of abandonAfter (lateSlack).
local slack = 0
if now < tonumber(held[4] or '0') then slack = tonumber(held[3] or '0') end
if hint.late ~= nil and hint.late > 0 then
  slack = math.max(slack, math.min(hint.late, abandonMs))
  redis.call('HSET', lifeKey, 'late', slack, 'lateUntil', now + abandonMs)
end
local reserved = 0
if now < tonumber(life[3]) then reserved = tonumber(life[2]) end


-- The numbers this script hands Redis for every visitor, as text made here. Redis writes a Lua
-- number argument with "%.17g", and Lua a number joined to a string with "%.14g": printf's
-- floating-point path, a tenth of Redis's time in a poll. For an integer '%d' writes the same text.
local function text(n)
  if n == math.floor(n) and n > -2 ^ 53 and n < 2 ^ 53 then return string.format('%d', n) end
  return string.format('%.17g', n)
end
local nowText = text(now)
local seenUntilText = text(now + abandonMs)

local function seenKey(visitor)
  return seenPrefix .. text(bucketOf(visitor))
end

-- The visitor is waiting and polled now: note it, and make sure their bucket will be checked (the
-- buckets are put on the sweep after step 1, one ZADD for the call).
local marked, toSweep = {}, {}
local function markSeen(visitor)
  local b = bucketOf(visitor)
  local bucket = text(b)
  redis.call('HSET', seenPrefix .. bucket, visitor, nowText)
  if not marked[b] then
    marked[b] = true
    toSweep[#toSweep + 1] = seenUntilText
    toSweep[#toSweep + 1] = bucket
  end
end

-- The visitor no longer waits (admitted or gone).
local function unseen(visitor)
  redis.call('HDEL', seenKey(visitor), visitor)
end

-- 0. Sessions that ran out free their slots; the rate window keeps the last 60 s; old marks go.
redis.call('ZREMRANGEBYSCORE', act, '-inf', nowText)
redis.call('ZREMRANGEBYSCORE', adm, '-inf', text(now - 60000))
-- A used-up place's mark is kept an abandonAfter past it: a late edge reads a queue token up to
-- abandonAfter past its expiry (expireUsed in core/admission.ts).
redis.call('ZREMRANGEBYSCORE', used, '-inf', text(now - abandonMs))
redis.call('ZREMRANGEBYSCORE', ended, '-inf', now - ENDED_KEEP_MS)
-- Ended sessions are rare: while there are none, no visitor is looked up among them.
local anyEnded = redis.call('ZCARD', ended) > 0

local arrivals, expiries, endedFor = {}, {}, {}
-- Step 1's view of the polling visitors: who is admitted (true) and where each waits (arrival µs).
local activeOf, placeOf = {}, {}
local admittedNow = 0

-- An admission uses up the visitor's place: their queue token no longer brings them back to it.
local function useUp(visitor)
  redis.call('ZADD', used, now + abandonMs, visitor)
end

local function admit(i)
  expiries[i] = now + sessionMs
  redis.call('ZADD', act, expiries[i], visitors[i])
  activeOf[visitors[i]] = true
end

-- 1. Each visitor: no place if an admin ended their session; else collect an admission, pass
-- through, or take or keep their place. Who is admitted and who holds a place is looked up for the
-- whole call at once (ZMSCORE); activeOf and placeOf then follow what this loop changes, for a
-- visitor who polls twice in one call.
if count > 0 then
  local actives = redis.call('ZMSCORE', act, unpack(visitors))
  local places = redis.call('ZMSCORE', q, unpack(visitors))
  for i = 1, count do
    activeOf[visitors[i]] = actives[i] ~= false
    placeOf[visitors[i]] = tonumber(places[i])
  end
end
for i = 1, count do
  local visitor = visitors[i]
  local tokenArrival, tokenExpires, draw, lane = tokenArrivals[i], tokenExpiries[i], draws[i], lanes[i]
  if anyEnded and redis.call('ZSCORE', ended, visitor) then
    endedFor[i] = true
    arrivals[i] = 0
  elseif activeOf[visitor] then
    -- Admitted while away, or already active: this poll collects the admission (and uses the place up
    -- again: no queue token signed before now may bring the visitor back to it).
    redis.call('ZREM', q, visitor)
    placeOf[visitor] = nil
    unseen(visitor)
    useUp(visitor)
    arrivals[i] = tokenArrival or nowUs
    admit(i)
  else
    local arrival = placeOf[visitor]
    local known = arrival ~= nil
    local usedUntil = nil
    if not known or lane then usedUntil = tonumber(redis.call('ZSCORE', used, visitor)) end
    if not known then
      if tokenArrival and (not usedUntil or (tokenExpires or 0) > usedUntil) then
        -- A drawn place lies before the opening by design, maybe after now: it is kept as it is.
        if scheduled and isDrawn(tokenArrival) then arrival = tokenArrival else arrival = math.min(tokenArrival, nowUs) end
      elseif draw and prequeue then
        arrival = draw
      elseif not lane or usedUntil then
        arrival = math.max(nowUs, tonumber(redis.call('GET', last) or '0') + 1)
        redis.call('SET', last, arrival)
      end
    end
    -- A redeemed code's place (core/access.ts), when it is earlier than the one held and no admission
    -- used the place up.
    local laneTaken = lane ~= nil and not usedUntil and (arrival == nil or lane < arrival)
    if laneTaken then arrival = lane end
    arrivals[i] = arrival
    if mode == 'passthrough' then
      redis.call('ZREM', q, visitor)
      placeOf[visitor] = nil
      unseen(visitor)
      redis.call('ZADD', adm, now, visitor .. ':' .. now)
      useUp(visitor)
      admittedNow = admittedNow + 1
      admit(i)
    else
      if not known or laneTaken then
        redis.call('ZADD', q, arrival, visitor)
        placeOf[visitor] = arrival
        if scheduled and isDrawn(arrival) then
          redis.call('ZADD', drawn, arrival, visitor)
          redis.call('PEXPIREAT', drawn, opensAt + DRAWN_KEEP_MS)
        end
      end
      markSeen(visitor)
    end
  end
end
if #toSweep > 0 then redis.call('ZADD', sweep, 'NX', unpack(toSweep)) end

-- 2. Visitors silent for abandonAfter leave the line. Each bucket is due when its oldest entry
-- goes stale; checking it drops what is stale and schedules the bucket for its next oldest. While an
-- edge is late, as if it were `slack` earlier.
local due = {}
local sweepAt = now - slack
if not holding then due = redis.call('ZRANGEBYSCORE', sweep, '-inf', text(sweepAt), 'LIMIT', 0, MAX_SWEEP) end
local abandoned = 0
for _, b in ipairs(due) do
  local key = seenPrefix .. b
  local entries = redis.call('HGETALL', key)
  local oldest = nil
  local gone = {}
  for j = 1, #entries, 2 do
    local seenAt = tonumber(entries[j + 1])
    if seenAt <= sweepAt - abandonMs then
      gone[#gone + 1] = entries[j]
    elseif not oldest or seenAt < oldest then
      oldest = seenAt
    end
  end
  if #gone > 0 then
    redis.call('HDEL', key, unpack(gone))
    redis.call('ZREM', q, unpack(gone))
    abandoned = abandoned + #gone
  end
  if oldest then
    redis.call('ZADD', sweep, oldest + abandonMs, b)
  else
    redis.call('ZREM', sweep, b)
  end
end
if abandoned > 0 then
  redis.call('HINCRBY', stat, 'abandoned', abandoned)
  local bucket = math.floor(now / 10000)
  redis.call('HINCRBY', stat, 'abn:' .. bucket, abandoned)
  redis.call('HDEL', stat, 'abn:' .. (bucket - 7), 'abn:' .. (bucket - 8), 'abn:' .. (bucket - 9), 'abn:' .. (bucket - 10))
end

-- 3. Admit from the head of the line: as many as free slots, the pace and the per-second cap allow
-- (dueAdmissions, perSecondCap and grantBudget in core/pace.ts).
local granted = {}
if mode == 'fifo' and not recovering and not beforeOpening and not holding then
  local interval = math.floor(60000000 / perMinute)
  local lastSlotUs = tonumber(redis.call('GET', pace) or '')
  local fromUs = nowUs - CATCH_UP_US
  if lastSlotUs then fromUs = math.max(lastSlotUs + interval, fromUs) end
  local due = 0
  if fromUs <= nowUs then due = 1 + math.floor((nowUs - fromUs) / interval) end
  local perSecondRoom = math.floor(perMinute / 60) + 1 - redis.call('ZCOUNT', adm, now - 1000 + 1, '+inf')
  local budget = math.min(cap - reserved - redis.call('ZCARD', act), due, perSecondRoom, MAX_STEP)
  local grants = 0
  if budget > 0 then
    local heads = redis.call('ZRANGE', q, 0, budget - 1)
    if #heads > 0 then
      local polling = {}
      for i = 1, count do polling[visitors[i]] = true end
      local slots, events = {}, {}
      for _, v in ipairs(heads) do
        -- A visitor polling now starts their session; one who is away has until abandonAfter
        -- (and the slack for a late edge) after their last poll to come and collect it, and at least
        -- 1.5 refreshes from now (collectWindowMs: the store may have missed their last polls, in an outage).
        local expires
        if polling[v] then
          expires = now + sessionMs
          granted[v] = expires
          useUp(v)
        else
          local seenAt = tonumber(redis.call('HGET', seenKey(v), v) or now)
          expires = math.max(seenAt + abandonMs + slack, now + collectWindowMs(limits.refreshSeconds))
          -- The place is used up as of just before their last poll: the token it signed still brings them
          -- back should this grant lapse uncollected (a poll held up at a late edge), an older one does
          -- not, and collecting marks it later.
          redis.call('ZADD', used, seenAt + abandonMs - 1, v)
        end
        unseen(v)
        slots[#slots + 1] = expires
        slots[#slots + 1] = v
        events[#events + 1] = now
        events[#events + 1] = v .. ':' .. now
      end
      redis.call('ZREM', q, unpack(heads))
      redis.call('ZADD', act, unpack(slots))
      redis.call('ZADD', adm, unpack(events))
      grants = #heads
      admittedNow = admittedNow + grants
    end
  end
  -- The pace (paceAfter): the last slot moves on by what was granted; what the per-second cap held
  -- back stays due, within the second of catch-up.
  if grants > 0 then redis.call('SET', pace, fromUs + (grants - 1) * interval) end
end
if admittedNow > 0 then redis.call('HINCRBY', stat, 'admitted', admittedNow) end

-- 4. Answers.
local inMinute = redis.call('ZCARD', adm)
local waiting = redis.call('ZCARD', q)
local state = 1
if mode ~= 'fifo' then state = 3 elseif beforeOpening then state = 6 elseif recovering then state = 5 end
local out = {}
local POLL = '%d,%d,%d,%d,'
for i = 1, count do
  local v = visitors[i]
  local expires = expiries[i] or granted[v]
  local drawRank = 0
  if scheduled and not endedFor[i] then drawRank = (redis.call('ZRANK', drawn, v) or -1) + 1 end
  if endedFor[i] then
    out[i] = '4,0,0,0,'
  elseif expires then
    out[i] = string.format(POLL, 2, arrivals[i], expires, drawRank)
  else
    out[i] = string.format(POLL, state, arrivals[i], redis.call('ZRANK', q, v) + 1, drawRank)
  end
end
out[count + 1] = string.format('%d,%d,%d,%d,%d,%d,', waiting, inMinute, now, lifeEpoch, lifeBorn, seq)
return table.concat(out)
