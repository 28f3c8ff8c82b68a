-- gate-claim-4.lua: one claim at the gate, all or nothing. If the gate knows stock for the event and
-- each unit, and every unit has enough left, marks them all claimed by the hold until now + ttl;
-- otherwise marks nothing. Lapsed holds are given back first (lazily, here and in every gate script).
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] hold id
--   ARGV[3] ttl ms
--   ARGV[4] n, then n pairs: unit, quantity
--   ARGV[5 + 2n] how many nearest free candidates to return
--   ARGV[6 + 2n] the candidates, best first, in one argument separated by spaces (one argument
--                costs the client far less to send than 32)
-- Output: { "pass" } | { "unknown" } | { "gone", { unit, left, unit, left, ... }, { nearest ... } }
-- #include lib/clock.lua
-- #include lib/gate.lua
local now = clockNow(ARGV[1])
if redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 0 then return { 'unknown' } end
lapse(now)
local hold = ARGV[2]
if redis.call('ZSCORE', KEYS[2], hold) then return { 'pass' } end
local n = tonumber(ARGV[4])
local units, quantities = {}, {}
for i = 1, n do
  units[i] = ARGV[3 + 2 * i]
  quantities[i] = tonumber(ARGV[4 + 2 * i])
end
local left = redis.call('HMGET', KEYS[1], unpack(units))
local gone = {}
for i = 1, n do
  if not left[i] then return { 'unknown' } end
  local l = tonumber(left[i])
  if l < quantities[i] then
    gone[#gone + 1] = units[i]
    gone[#gone + 1] = l
  end
end
if #gone > 0 then
  local want = tonumber(ARGV[5 + 2 * n])
  local nearest = {}
  local candidates = {}
  for c in string.gmatch(ARGV[6 + 2 * n] or '', '%S+') do candidates[#candidates + 1] = c end
  if want > 0 and #candidates > 0 then
    local free = redis.call('HMGET', KEYS[1], unpack(candidates))
    for i = 1, #candidates do
      if #nearest >= want then break end
      if free[i] and tonumber(free[i]) > 0 then nearest[#nearest + 1] = candidates[i] end
    end
  end
  return { 'gone', gone, nearest }
end
local encoded, total = {}, 0
for i = 1, n do
  redis.call('HINCRBY', KEYS[1], units[i], -quantities[i])
  encoded[#encoded + 1] = units[i]
  encoded[#encoded + 1] = quantities[i]
  total = total + quantities[i]
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), hold)
redis.call('HSET', KEYS[3], hold, cjson.encode({ b = now, u = encoded }))
redis.call('HINCRBY', KEYS[4], 'held', total)
redis.call('HINCRBY', KEYS[4], 'free', -total)
return { 'pass' }
