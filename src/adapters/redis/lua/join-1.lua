-- join-1.lua: counts a new place against its client network's cap for the current minute, unless the
-- network is at the cap. A fixed window: the minutes of the store's clock.
-- Input:
--   KEYS[1] joins:  prefix of the minute hashes: <prefix><minute> = hash network -> new places
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] the network (core/network.ts)
--   ARGV[3] the cap: new places per network per minute (> 0)
-- Output: { allowed 1 or 0, the network's new places this minute, ms until the next minute, now }
-- The minute's hash is named from the declared prefix, so it carries the room's hash tag. It is kept
-- two minutes (real time) after its last change: on the Redis clock it outlives its minute.
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local minute = math.floor(now / 60000)
local key = KEYS[1] .. minute
local limit = tonumber(ARGV[3])
local count = tonumber(redis.call('HGET', key, ARGV[2]) or '0')
local retry = (minute + 1) * 60000 - now
if count >= limit then return { 0, count, retry, now } end
count = redis.call('HINCRBY', key, ARGV[2], 1)
redis.call('PEXPIRE', key, 120000)
return { 1, count, retry, now }
