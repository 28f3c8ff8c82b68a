-- gate-reconcile-4.lua: makes the gate agree with the database (the record). The gate's holds become
-- the database's live holds, plus the holds the gate marked less than `grace` ago that the database
-- has not written yet (claims in flight); each unit's quantity left becomes its capacity, less what is
-- sold, less those holds. Counts every unit whose quantity left was wrong and every hold added or
-- dropped. A gate that knew nothing (first start, a flushed or new Redis) is rebuilt: no repairs.
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] grace ms
--   ARGV[3] u, then u triples: unit, capacity, sold
--   then h, then h holds: id, expiry ms, k, then k pairs: unit, quantity
-- Output: { repairs, 1 if rebuilt else 0 }
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local grace = tonumber(ARGV[2])
local known = redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 1
local left, order = {}, {}
local sold = 0
local at = 3
local u = tonumber(ARGV[at])
for i = 1, u do
  local unit = ARGV[at + 3 * i - 2]
  left[unit] = tonumber(ARGV[at + 3 * i - 1]) - tonumber(ARGV[at + 3 * i])
  sold = sold + tonumber(ARGV[at + 3 * i])
  order[#order + 1] = unit
end
at = at + 3 * u + 1
local holds = {} -- id -> { expiry, born, encoded units }
local holdOrder = {}
local h = tonumber(ARGV[at])
at = at + 1
for _ = 1, h do
  local id, expiry, k = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local encoded = {}
  for j = 1, k do
    encoded[#encoded + 1] = ARGV[at + 1 + 2 * j]
    encoded[#encoded + 1] = tonumber(ARGV[at + 2 + 2 * j])
  end
  holds[id] = { expiry, now, encoded }
  holdOrder[#holdOrder + 1] = id
  at = at + 3 + 2 * k
end
local repairs = 0
if known then
  local seen = {}
  local had = redis.call('HGETALL', KEYS[3])
  for i = 1, #had, 2 do
    local id, hold = had[i], cjson.decode(had[i + 1])
    seen[id] = true
    if holds[id] then
      holds[id][2] = hold.b
    else
      local expiry = tonumber(redis.call('ZSCORE', KEYS[2], id) or '0')
      if now - hold.b < grace and expiry > now then
        holds[id] = { expiry, hold.b, hold.u }
        holdOrder[#holdOrder + 1] = id
      else
        repairs = repairs + 1
      end
    end
  end
  for _, id in ipairs(holdOrder) do
    if not seen[id] then repairs = repairs + 1 end
  end
end
local held = 0
for _, id in ipairs(holdOrder) do
  local encoded = holds[id][3]
  for j = 1, #encoded, 2 do
    left[encoded[j]] = (left[encoded[j]] or 0) - encoded[j + 1]
    held = held + encoded[j + 1]
  end
end
if known then
  local old = redis.call('HGETALL', KEYS[1])
  local oldLeft = {}
  for i = 1, #old, 2 do oldLeft[old[i]] = tonumber(old[i + 1]) end
  for unit, n in pairs(left) do
    if oldLeft[unit] ~= n then repairs = repairs + 1 end
  end
  for unit in pairs(oldLeft) do
    if left[unit] == nil then repairs = repairs + 1 end
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local free = 0
local batch = {}
local function flush(key, cmd)
  if #batch > 0 then redis.call(cmd, key, unpack(batch)) end
  batch = {}
end
for unit, n in pairs(left) do
  free = free + n
  batch[#batch + 1] = unit
  batch[#batch + 1] = n
  if #batch >= 1000 then flush(KEYS[1], 'HSET') end
end
flush(KEYS[1], 'HSET')
for _, id in ipairs(holdOrder) do
  batch[#batch + 1] = holds[id][1]
  batch[#batch + 1] = id
  if #batch >= 1000 then flush(KEYS[2], 'ZADD') end
end
flush(KEYS[2], 'ZADD')
for _, id in ipairs(holdOrder) do
  batch[#batch + 1] = id
  batch[#batch + 1] = cjson.encode({ b = holds[id][2], u = holds[id][3] })
  if #batch >= 1000 then flush(KEYS[3], 'HSET') end
end
flush(KEYS[3], 'HSET')
redis.call('HSET', KEYS[4], 'free', free, 'held', held, 'sold', sold, 'reconciledAt', now)
redis.call('HINCRBY', KEYS[4], 'repairs', repairs)
if known then return { repairs, 0 } end
return { 0, 1 }
