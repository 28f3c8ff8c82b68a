-- renew-1.lua: extends an admitted visitor's session, if it has not ended.
-- Input:
--   KEYS[1] act  zset  visitor -> session expiry ms
--   ARGV[1] visitor id
--   ARGV[2] now ms, or "" to use Redis TIME
--   ARGV[3] session duration ms
-- Output: { new expiry ms or 0 when the session has ended, now }
local act = KEYS[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local expires = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not expires or expires <= now then
  redis.call('ZREM', act, ARGV[1])
  return { 0, now }
end
local renewed = now + tonumber(ARGV[3])
redis.call('ZADD', act, renewed, ARGV[1])
return { renewed, now }
