-- renew-6.lua: extends an admitted visitor's session. The edge calls it only for a visitor whose
-- admission token is valid, so a session the store does not know was forgotten (flush, failover),
-- not expired: it is restored. A session an admin ended is refused, and so is one the origin ended
-- (finish-2.lua) unless the visitor has been admitted again since.
-- Input:
--   KEYS[1] act    zset  visitor -> session expiry ms
--   KEYS[2] ended  zset  visitor -> when an admin ended their session, ms (kept ENDED_KEEP_MS)
--   KEYS[3] life   hash  the room's life (poll-12.lua): a restored session takes back its reserved slot
--   KEYS[4] q      zset  the line: a restored session leaves it (a store gone back in time may have it there)
--   KEYS[5] seen   prefix of the seen buckets
--   KEYS[6] fin    zset  visitor -> when the origin ended their session, ms
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
if not redis.call('ZSCORE', act, visitor) then
  if redis.call('ZSCORE', KEYS[6], visitor) then return { 0, now } end
  -- A session the store does not know came from before a loss (sessionReturned in core/admission.ts).
  local life = redis.call('HMGET', KEYS[3], 'reserved', 'reservedUntil')
  if tonumber(life[1] or '0') > 0 and now < tonumber(life[2] or '0') then redis.call('HINCRBY', KEYS[3], 'reserved', -1) end
  redis.call('ZREM', KEYS[4], visitor)
  redis.call('HDEL', KEYS[5] .. bucketOf(visitor), visitor)
end
local renewed = now + sessionMs
redis.call('ZADD', act, renewed, visitor)
return { renewed, now }
