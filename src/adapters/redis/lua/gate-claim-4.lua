-- gate-claim-4.lua: claims at the gate, each all or nothing, in the order given (claims that reach
-- an origin together share a call: turn-batches.ts). For each claim: if the gate knows stock for the
-- event and each unit, and every unit has enough left, marks them all claimed by the hold until
-- now + ttl; otherwise marks nothing, and offers the first free candidates (none are looked up once
-- the event has nothing left). Lapsed holds are given back first (lazily, here and in every gate script).
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] k, the number of claims; then for each claim:
--     hold id, ttl ms, n, then n pairs unit, quantity, then how many nearest free candidates to
--     return, then the candidates, best first, in one argument separated by spaces (one argument
--     costs the client far less to send than 32)
-- Output: one answer per claim, in order: { "pass" } | { "unknown" }
--   | { "gone", { unit, left, unit, left, ... }, { nearest ... } }
-- #include lib/clock.lua
-- #include lib/gate.lua
local now = clockNow(ARGV[1])
local k = tonumber(ARGV[2])
local known = redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 1
if known then lapse(now) end
-- Units left in the whole event (meta's free, the sum of left), kept up to date as claims pass: with
-- none left there are no nearest to offer, and a sold-out rush skips their lookup.
local free = known and tonumber(redis.call('HGET', KEYS[4], 'free') or '0') or 0

-- One claim whose arguments start at ARGV[at]; returns its answer and where the next one starts.
local function claim(at)
  local hold, ttl, n = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local nextAt = at + 5 + 2 * n
  if not known then return { 'unknown' }, nextAt end
  if redis.call('ZSCORE', KEYS[2], hold) then return { 'pass' }, nextAt end
  local units, quantities = {}, {}
  for i = 1, n do
    units[i] = ARGV[at + 1 + 2 * i]
    quantities[i] = tonumber(ARGV[at + 2 + 2 * i])
  end
  local left = redis.call('HMGET', KEYS[1], unpack(units))
  local gone = {}
  for i = 1, n do
    if not left[i] then return { 'unknown' }, nextAt end
    local l = tonumber(left[i])
    if l < quantities[i] then
      gone[#gone + 1] = units[i]
      gone[#gone + 1] = l
    end
  end
  if #gone > 0 then
    local want = tonumber(ARGV[at + 3 + 2 * n])
    local candidates, nearest = {}, {}
    if want > 0 and free > 0 then
      for c in string.gmatch(ARGV[at + 4 + 2 * n] or '', '%S+') do candidates[#candidates + 1] = c end
    end
    if #candidates > 0 then
      local leftOf = redis.call('HMGET', KEYS[1], unpack(candidates))
      for i = 1, #candidates do
        if #nearest >= want then break end
        if leftOf[i] and tonumber(leftOf[i]) > 0 then nearest[#nearest + 1] = candidates[i] end
      end
    end
    return { 'gone', gone, nearest }, nextAt
  end
  local encoded, total = {}, 0
  for i = 1, n do
    redis.call('HINCRBY', KEYS[1], units[i], -quantities[i])
    encoded[#encoded + 1] = units[i]
    encoded[#encoded + 1] = quantities[i]
    total = total + quantities[i]
  end
  redis.call('ZADD', KEYS[2], now + ttl, hold)
  redis.call('HSET', KEYS[3], hold, cjson.encode({ b = now, u = encoded }))
  redis.call('HINCRBY', KEYS[4], 'held', total)
  redis.call('HINCRBY', KEYS[4], 'free', -total)
  free = free - total
  return { 'pass' }, nextAt
end

local answers = {}
local at = 3
for c = 1, k do
  answers[c], at = claim(at)
end
return answers
