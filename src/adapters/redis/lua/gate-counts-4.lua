-- gate-counts-4.lua: an event's free, held and sold quantities, after giving back lapsed holds.
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
-- Output: {} if the gate knows no stock for the event, else { free, held, sold, reconciledAt, repairs }
-- #include lib/clock.lua
-- #include lib/gate.lua
local now = clockNow(ARGV[1])
if redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 0 then return {} end
lapse(now)
local meta = redis.call('HMGET', KEYS[4], 'free', 'held', 'sold', 'reconciledAt', 'repairs')
return { tonumber(meta[1] or '0'), tonumber(meta[2] or '0'), tonumber(meta[3] or '0'), tonumber(meta[4]), tonumber(meta[5] or '0') }
