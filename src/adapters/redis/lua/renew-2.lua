-- renew-2.lua: extends an admitted visitor's session. The edge calls it only for a visitor whose
-- admission token is valid, so a session the store does not know was forgotten (flush, failover),
-- not expired: it is restored. A session an admin ended is refused.
-- Input:
--   KEYS[1] act    zset  visitor -> session expiry ms
--   KEYS[2] ended  zset  visitor -> when an admin ended their session, ms (kept ENDED_KEEP_MS)
--   ARGV[1] visitor id
--   ARGV[2] now ms, or "" to use Redis TIME
--   ARGV[3] session duration ms
-- Output: { new expiry ms, or 0 when the session was ended; now }
-- #include lib/clock.lua
-- #include lib/rule.lua
local act, ended, visitor = KEYS[1], KEYS[2], ARGV[1]
local sessionMs = tonumber(ARGV[3])
local now = clockNow(ARGV[2])
redis.call('ZREMRANGEBYSCORE', ended, '-inf', now - ENDED_KEEP_MS)
if redis.call('ZSCORE', ended, visitor) then
  redis.call('ZREM', act, visitor)
  return { 0, now }
end
local renewed = now + sessionMs
redis.call('ZADD', act, renewed, visitor)
return { renewed, now }
