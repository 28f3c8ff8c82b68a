-- refusals-1.lua: adds the joins an edge refused since its last flush (at most once a second), by
-- reason, and answers the room's counts: in all, and in about the last minute.
-- Input:
--   KEYS[1] refused  hash  t:<reason> = refused in all; b:<reason>:<10-s bucket> = refused in that bucket
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2..] reason, count pairs (none: only read)
-- Output: { now, then for each reason with a total: reason, total, last minute (this bucket and the five before) }
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local bucket = math.floor(now / 10000)
for i = 2, #ARGV - 1, 2 do
  local n = tonumber(ARGV[i + 1])
  if n and n > 0 then
    redis.call('HINCRBY', KEYS[1], 't:' .. ARGV[i], n)
    redis.call('HINCRBY', KEYS[1], 'b:' .. ARGV[i] .. ':' .. bucket, n)
  end
end
local reasons, totals, recent, old = {}, {}, {}, {}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local name, value = fields[i], tonumber(fields[i + 1])
  local reason = string.match(name, '^t:(.+)$')
  if reason then
    reasons[#reasons + 1] = reason
    totals[reason] = value
  else
    local r, b = string.match(name, '^b:(.+):(%d+)$')
    b = tonumber(b)
    if r and b <= bucket - 6 then old[#old + 1] = name
    elseif r and b <= bucket then recent[r] = (recent[r] or 0) + value end
  end
end
if #old > 0 then redis.call('HDEL', KEYS[1], unpack(old)) end
local out = { now }
for _, reason in ipairs(reasons) do
  out[#out + 1] = reason
  out[#out + 1] = totals[reason]
  out[#out + 1] = recent[reason] or 0
end
return out
