-- lane-lease-1.lua: the lease that lets one allocator act for an event's lane at a time.
-- Input:
--   KEYS[1] lease  string  the token of the allocator holding it, expiring
--   ARGV[1] "take" (take it if free, renew it if held by this token) or "drop" (let it go if held by it)
--   ARGV[2] the allocator's token
--   ARGV[3] how long the lease lasts, ms (take)
-- Output: 1 if this token holds the lease after the call (take) or let it go (drop), else 0
local holder = redis.call('GET', KEYS[1])
if ARGV[1] == 'drop' then
  if holder == ARGV[2] then
    redis.call('DEL', KEYS[1])
    return 1
  end
  return 0
end
if holder and holder ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
