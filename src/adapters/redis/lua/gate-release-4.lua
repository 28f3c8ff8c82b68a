-- gate-release-4.lua: a hold's units come back (the database refused the claim, or the hold was
-- released, lost or refunded). A hold the gate does not have changes nothing.
-- Input: KEYS as in lib/gate.lua
--   ARGV[1] now ms, or "" to use Redis TIME
--   ARGV[2] hold id
-- Output: 1 if the gate had the hold, else 0
-- #include lib/clock.lua
-- #include lib/gate.lua
local now = clockNow(ARGV[1])
if redis.call('HEXISTS', KEYS[4], 'reconciledAt') == 0 then return 0 end
lapse(now)
if giveBack(ARGV[2]) then return 1 end
return 0
