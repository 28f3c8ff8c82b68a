-- sample-5.lua: records a room's numbers once per 10-s bucket for the admin chart (every edge may
-- call it; the first in a bucket wins), and drops samples older than the history kept.
-- Input:
--   KEYS[1] q     zset  the line
--   KEYS[2] act   zset  active sessions
--   KEYS[3] adm   zset  admissions in the last 60 s
--   KEYS[4] stat  hash  abn:<10-s bucket> counts
--   KEYS[5] hist  hash  10-s bucket -> "t,waiting,active,admittedLastMinute,abandonedLastMinute"
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] how long to keep samples, ms
-- Output: 1 if this call recorded the bucket's sample, else 0
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local bucket = math.floor(now / 10000)
if redis.call('HEXISTS', KEYS[5], bucket) == 1 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - 60000)
local recent = redis.call('HMGET', KEYS[4], 'abn:' .. bucket, 'abn:' .. (bucket - 1), 'abn:' .. (bucket - 2),
  'abn:' .. (bucket - 3), 'abn:' .. (bucket - 4), 'abn:' .. (bucket - 5))
local abandoned = 0
for _, n in ipairs(recent) do abandoned = abandoned + (tonumber(n) or 0) end
redis.call('HSET', KEYS[5], bucket, table.concat({ now, redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]), abandoned }, ','))
local oldest = math.floor((now - tonumber(ARGV[2])) / 10000)
local old = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[5])) do
  if tonumber(field) < oldest then old[#old + 1] = field end
end
if #old > 0 then redis.call('HDEL', KEYS[5], unpack(old)) end
return 1
