-- analytics-5.lua: one edge's record of a room's minute for the analytics (src/ports/analytics-store.ts).
-- The first call in a minute of the store's clock takes the minute's state sample; every call adds
-- its edge's admissions by time in queue.
-- Input:
--   KEYS[1] q        zset  the line
--   KEYS[2] act      zset  active sessions: visitor -> expiry ms
--   KEYS[3] stat     hash  admitted, abandoned: running totals
--   KEYS[4] refused  hash  t:<reason>: joins refused in all
--   KEYS[5] an:      prefix of the hour hashes: <prefix><hour> (hour = floor(ms / 3600000)), with per
--                    minute of the hour m (0-59):
--                      <m>  "waiting,active,admitted,abandoned,stock[,reason=refused...]", written once
--                      w<m> "bound:count,..." admissions by time in queue, bound ascending, added to
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] the stock as the edge saw it: a (available), h (all held), s (sold out), u (unknown), n (no event)
--   ARGV[3] how long an hour's hash is kept after the hour ends, ms
--   ARGV[4..] bound, count pairs: the edge's admissions since its last record, by time-in-queue bucket
--             (upper bound in seconds, +Inf for the last)
-- Output: { 1 if this call took the minute's state sample, else 0; the minute; now }
-- The hour's hash is named from the declared prefix, so it carries the room's hash tag. Its expiry is
-- set relative to now (PEXPIRE), so that on the Redis clock it goes `keep` after its hour ends.
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local minute = math.floor(now / 60000)
local hour = math.floor(minute / 60)
local key = KEYS[5] .. string.format('%d', hour)
local m = string.format('%d', minute - hour * 60)

local sampled = 0
if redis.call('HEXISTS', key, m) == 0 then
  local totals = redis.call('HMGET', KEYS[3], 'admitted', 'abandoned')
  local parts = {
    redis.call('ZCARD', KEYS[1]),
    redis.call('ZCOUNT', KEYS[2], '(' .. string.format('%d', now), '+inf'),
    totals[1] or '0',
    totals[2] or '0',
    ARGV[2],
  }
  local refused = redis.call('HGETALL', KEYS[4])
  for i = 1, #refused, 2 do
    local reason = string.match(refused[i], '^t:(.+)$')
    if reason then parts[#parts + 1] = reason .. '=' .. refused[i + 1] end
  end
  redis.call('HSET', key, m, table.concat(parts, ','))
  sampled = 1
end

local function boundValue(bound)
  if bound == '+Inf' then return math.huge end
  return tonumber(bound)
end

if #ARGV >= 5 then
  local field = 'w' .. m
  local counts, bounds = {}, {}
  local function add(bound, n)
    if counts[bound] == nil then
      counts[bound] = 0
      bounds[#bounds + 1] = bound
    end
    counts[bound] = counts[bound] + n
  end
  for bound, n in string.gmatch(redis.call('HGET', key, field) or '', '([^:,]+):(%d+)') do add(bound, tonumber(n)) end
  for i = 4, #ARGV - 1, 2 do
    local n = tonumber(ARGV[i + 1])
    if n and n > 0 then add(ARGV[i], n) end
  end
  if #bounds > 0 then
    table.sort(bounds, function(a, b) return boundValue(a) < boundValue(b) end)
    local out = {}
    for i, bound in ipairs(bounds) do out[i] = bound .. ':' .. string.format('%d', counts[bound]) end
    redis.call('HSET', key, field, table.concat(out, ','))
  end
end

redis.call('PEXPIRE', key, (hour + 1) * 3600000 + tonumber(ARGV[3]) - now)
return { sampled, minute, now }
