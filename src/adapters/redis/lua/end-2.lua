-- end-2.lua: ends one visitor's session and remembers that it was ended, so that a renewal
-- with their still-valid token is refused rather than restored.
-- Input:
--   KEYS[1] act    zset  visitor -> session expiry ms
--   KEYS[2] ended  zset  visitor -> when their session was ended, ms
--   ARGV[1] visitor id
--   ARGV[2] now ms, or "" to use Redis TIME
-- Output: 1 if the visitor had an active session, else 0
-- #include lib/clock.lua
local now = clockNow(ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
