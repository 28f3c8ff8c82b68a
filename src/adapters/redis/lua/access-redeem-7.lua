-- access-redeem-7.lua: one redemption of an access code or an invite link, atomically: the Redis copy of
-- redeem in src/core/access.ts, step for step and in the same order. Change both together;
-- test/contract/access-store.ts holds both stores to it, and two edges racing for the last use get
-- one redemption between them (test/access-race.test.ts).
-- Input:
--   KEYS[1] g     hash  grant id -> its terms, JSON (GrantTerms: kind, lane, maxUses, expiresAt, ...)
--   KEYS[2] u     hash  grant id -> uses so far
--   KEYS[3] r     hash  grant id -> when it was revoked, ms
--   KEYS[4] c     hash  code digest -> grant id
--   KEYS[5] v     hash  "<grant>:<visitor>" -> the arrival that visitor's redemption gave, µs
--   KEYS[6] last  hash  lane -> the last arrival handed out in it, µs
--   KEYS[7] f     prefix of the wrong tries' minute hashes: <prefix><minute> = network -> wrong codes
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] "code" or "link"
--   ARGV[3] the code's digest, or the checked link's grant id
--   ARGV[4] the visitor id
--   ARGV[5] the client network (core/network.ts), or "unknown"
--   ARGV[6] wrong codes a network may try per minute
-- Output: { status, arrival µs, uses so far, ms to the next minute, now ms, lane (1 priority, 2 separate), grant id }
--   status: 1 redeemed, 2 again (this visitor redeemed it before: the same arrival, no use counted),
--   3 unknown, 4 used up, 5 expired, 6 revoked, 7 throttled (the network's wrong tries this minute).
-- The minute's hash is named from the declared prefix, so it carries the room's hash tag; it is kept
-- two minutes after its last change.
-- #include lib/clock.lua

-- LANE_OFFSET_US in core/access.ts: a lane's arrivals lie this far before their redemption.
local OFFSET = { priority = 281474976710656, separate = 562949953421312 }
local LANE_CODE = { priority = 1, separate = 2 }

local now, nowUs = clockNow(ARGV[1])
local byCode = ARGV[2] == 'code'
local visitor, network, tries = ARGV[4], ARGV[5], tonumber(ARGV[6])
local minute = math.floor(now / 60000)
local retry = (minute + 1) * 60000 - now
local failures = KEYS[7] .. minute
local function refuse(status) return { status, 0, 0, retry, now, 0, '' } end

if byCode and tonumber(redis.call('HGET', failures, network) or '0') >= tries then return refuse(7) end
local id = ARGV[3]
if byCode then id = redis.call('HGET', KEYS[4], ARGV[3]) end
local json = id and redis.call('HGET', KEYS[1], id)
local grant = json and cjson.decode(json)
if not grant or grant.kind ~= ARGV[2] then
  if byCode then
    redis.call('HINCRBY', failures, network, 1)
    redis.call('PEXPIRE', failures, 120000)
  end
  return refuse(3)
end
if redis.call('HEXISTS', KEYS[3], id) == 1 then return refuse(6) end
if grant.expiresAt <= now then return refuse(5) end
local used = tonumber(redis.call('HGET', KEYS[2], id) or '0')
local mine = id .. ':' .. visitor
local before = tonumber(redis.call('HGET', KEYS[5], mine))
if before then return { 2, before, used, retry, now, LANE_CODE[grant.lane], id } end
if used >= grant.maxUses then return refuse(4) end
local arrival = math.max(nowUs - OFFSET[grant.lane], tonumber(redis.call('HGET', KEYS[6], grant.lane) or '0') + 1)
redis.call('HSET', KEYS[6], grant.lane, string.format('%d', arrival))
used = redis.call('HINCRBY', KEYS[2], id, 1)
redis.call('HSET', KEYS[5], mine, string.format('%d', arrival))
return { 1, arrival, used, retry, now, LANE_CODE[grant.lane], id }
