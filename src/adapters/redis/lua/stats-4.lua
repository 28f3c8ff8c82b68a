-- stats-4.lua: a room's numbers for health and admin views, after dropping what has run out.
-- Input:
--   KEYS[1] q     zset  the line
--   KEYS[2] act   zset  active sessions
--   KEYS[3] adm   zset  admissions in the last 60 s
--   KEYS[4] stat  hash  running totals and abn:<10-s bucket> counts
--   ARGV[1] now ms, or "" to use Redis TIME
-- Output: { waiting, active, admittedLastMinute, abandoned (total), abandonedLastMinute, now }
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - 60000)
-- The last minute's abandonment, in 10-s buckets: the current one and the five before it.
local bucket = math.floor(now / 10000)
local recent = redis.call('HMGET', KEYS[4], 'abn:' .. bucket, 'abn:' .. (bucket - 1), 'abn:' .. (bucket - 2),
  'abn:' .. (bucket - 3), 'abn:' .. (bucket - 4), 'abn:' .. (bucket - 5))
local lastMinute = 0
for _, n in ipairs(recent) do lastMinute = lastMinute + (tonumber(n) or 0) end
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  tonumber(redis.call('HGET', KEYS[4], 'abandoned') or '0'),
  lastMinute,
  now,
}
