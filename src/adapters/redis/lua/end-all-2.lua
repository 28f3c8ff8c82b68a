-- end-all-2.lua: ends every session of a room, remembering each as ended so that their still-valid
-- tokens are refused at renewal.
-- Input:
--   KEYS[1] act    zset  visitor -> session expiry ms
--   KEYS[2] ended  zset  visitor -> when their session was ended, ms
--   ARGV[1] now ms, or "" to use Redis TIME
-- Output: how many sessions were ended
-- #include lib/clock.lua
local now = clockNow(ARGV[1])
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for i = 1, #members, 1000 do
  local chunk = {}
  for j = i, math.min(i + 999, #members) do
    chunk[#chunk + 1] = now
    chunk[#chunk + 1] = members[j]
  end
  redis.call('ZADD', KEYS[2], unpack(chunk))
end
redis.call('DEL', KEYS[1])
return #members
