-- gate-sold-4.lua: a hold was confirmed: its units are taken for good. If the gate had already let
-- the hold lapse (its clock ahead of the database's), the units given back are taken again.
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] hold id
--   ARGV[3] n, then n pairs: unit, quantity (the hold's units, as the database has them)
-- Output: 1 if the gate had the hold, else 0
-- #include lib/clock.lua
-- #include lib/gate.lua
local now = clockNow(ARGV[1])
if redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 0 then return 0 end
lapse(now)
local n = tonumber(ARGV[3])
local total = 0
for i = 1, n do total = total + tonumber(ARGV[3 + 2 * i]) end
redis.call('HINCRBY', KEYS[4], 'sold', total)
local json = redis.call('HGET', KEYS[3], ARGV[2])
if json then
  local u = cjson.decode(json).u
  local held = 0
  for i = 2, #u, 2 do held = held + u[i] end
  redis.call('HINCRBY', KEYS[4], 'held', -held)
  redis.call('ZREM', KEYS[2], ARGV[2])
  redis.call('HDEL', KEYS[3], ARGV[2])
  return 1
end
for i = 1, n do redis.call('HINCRBY', KEYS[1], ARGV[2 + 2 * i], -tonumber(ARGV[3 + 2 * i])) end
redis.call('HINCRBY', KEYS[4], 'free', -total)
return 0
