-- poll-6.lua: one visitor's poll. Joins or keeps their place, drops visitors who stopped polling,
-- frees ended sessions, admits from the head of the line within the room's limits, and answers.
-- One EVALSHA per poll; the work is O(log N) in the length of the line plus what it admits or drops.
--
-- Input:
--   KEYS[1] q     zset  visitor -> arrival µs                 (the line, FIFO by score)
--   KEYS[2] seen  zset  visitor -> last poll ms                (waiting visitors only)
--   KEYS[3] act   zset  visitor -> session expiry ms           (admitted; an admission not yet
--                                                               collected expires abandonAfter after
--                                                               the visitor's last poll)
--   KEYS[4] adm   zset  "visitor:ms" -> admission ms            (the last 60 s: the rate window)
--   KEYS[5] stat  hash  abandoned, admitted                    (running totals)
--   KEYS[6] last  string  the last arrival handed out, µs       (arrivals are unique and rising,
--                                                               so two visitors never tie)
--   ARGV[1] visitor id
--   ARGV[2] arrival µs from a verified queue token, or ""      (restores a place Redis forgot)
--   ARGV[3] now ms, or "" to use Redis TIME                    (tests drive time; production doesn't)
--   ARGV[4] mode: fifo | paused | passthrough
--   ARGV[5] totalActiveUsers
--   ARGV[6] newUsersPerMinute
--   ARGV[7] abandonAfter ms
--   ARGV[8] session duration ms
-- Output: { state, arrival, position, waiting, admittedLastMinute, now, sessionExpires }
--   state: 1 queued, 2 admitted, 3 paused

local q, seen, act, adm, stat, last = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local visitor = ARGV[1]
local mode = ARGV[4]
local cap = tonumber(ARGV[5])
local perMinute = tonumber(ARGV[6])
local abandonMs = tonumber(ARGV[7])
local sessionMs = tonumber(ARGV[8])

local now = tonumber(ARGV[3])
local nowUs
if now then
  nowUs = now * 1000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local MAX_STEP = 500 -- most visitors one poll drops or admits; the rest wait for the next poll

-- Sessions that ran out free their slots; the rate window keeps only the last 60 s.
redis.call('ZREMRANGEBYSCORE', act, '-inf', now)
redis.call('ZREMRANGEBYSCORE', adm, '-inf', now - 60000)

local function admitted(arrival)
  local expires = now + sessionMs
  redis.call('ZADD', act, expires, visitor)
  return { 2, arrival, 0, 0, redis.call('ZCARD', adm), now, expires }
end

local tokenArrival = tonumber(ARGV[2])

-- Admitted while away, or already active: this poll collects the admission.
if redis.call('ZSCORE', act, visitor) then
  redis.call('ZREM', q, visitor)
  redis.call('ZREM', seen, visitor)
  return admitted(tokenArrival or nowUs)
end

local arrival = tonumber(redis.call('ZSCORE', q, visitor))
if not arrival then
  if tokenArrival then
    arrival = math.min(tokenArrival, nowUs)
  else
    arrival = math.max(nowUs, tonumber(redis.call('GET', last) or '0') + 1)
    redis.call('SET', last, arrival)
  end
end

if mode == 'passthrough' then
  redis.call('ZREM', q, visitor)
  redis.call('ZREM', seen, visitor)
  redis.call('ZADD', adm, now, visitor .. ':' .. now)
  redis.call('HINCRBY', stat, 'admitted', 1)
  return admitted(arrival)
end

redis.call('ZADD', q, arrival, visitor)
redis.call('ZADD', seen, now, visitor)

-- Visitors silent for abandonAfter leave the line.
local stale = redis.call('ZRANGEBYSCORE', seen, '-inf', now - abandonMs, 'LIMIT', 0, MAX_STEP)
if #stale > 0 then
  redis.call('ZREM', seen, unpack(stale))
  redis.call('ZREM', q, unpack(stale))
  redis.call('HINCRBY', stat, 'abandoned', #stale)
end

local mine = nil
if mode == 'fifo' then
  local free = cap - redis.call('ZCARD', act)
  local perTen = math.ceil(perMinute / 6)
  local budget = math.min(free, perMinute - redis.call('ZCARD', adm),
    perTen - redis.call('ZCOUNT', adm, now - 10000 + 1, '+inf'), MAX_STEP)
  if budget > 0 then
    local heads = redis.call('ZRANGE', q, 0, budget - 1)
    if #heads > 0 then
      local grants = {}
      local events = {}
      for i, v in ipairs(heads) do
        local expires
        if v == visitor then
          expires = now + sessionMs
          mine = expires
        else
          expires = tonumber(redis.call('ZSCORE', seen, v) or now) + abandonMs
        end
        grants[#grants + 1] = expires
        grants[#grants + 1] = v
        events[#events + 1] = now
        events[#events + 1] = v .. ':' .. now
      end
      redis.call('ZREM', q, unpack(heads))
      redis.call('ZREM', seen, unpack(heads))
      redis.call('ZADD', act, unpack(grants))
      redis.call('ZADD', adm, unpack(events))
      redis.call('HINCRBY', stat, 'admitted', #heads)
    end
  end
end

if mine then
  return { 2, arrival, 0, 0, redis.call('ZCARD', adm), now, mine }
end

local state = 1
if mode ~= 'fifo' then state = 3 end
return { state, arrival, redis.call('ZRANK', q, visitor) + 1, redis.call('ZCARD', q), redis.call('ZCARD', adm), now, 0 }
