-- finish-2.lua: ends one visitor's session because the origin is done with them (Anteroom-Command:
-- end-session). The slot frees at once; the end is remembered while a token from before may still
-- be valid, so that every edge refuses it (watch) and a renewal of it is refused (renew-6.lua).
-- Unlike end-2.lua, the visitor is not kept out of the line.
-- Input:
--   KEYS[1] act  zset  visitor -> session expiry ms
--   KEYS[2] fin  zset  visitor -> when the origin ended their session, ms
--   ARGV[1] visitor id
--   ARGV[2] now ms, or "" to use Redis TIME
--   ARGV[3] how long to remember the end, ms
-- Output: { 1 if the visitor had an active session, else 0; now }
-- #include lib/clock.lua
local now = clockNow(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]))
redis.call('ZADD', KEYS[2], now, ARGV[1])
-- Once no token from before any of these ends can be valid, the set goes, even if no finish follows.
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return { redis.call('ZREM', KEYS[1], ARGV[1]), now }
