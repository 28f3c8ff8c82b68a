-- lib/clock.lua (included): the time of this call. Tests pass it in; production leaves the argument
-- empty and every edge gets the one clock of Redis TIME.
-- Input:  given  ms as a string, or "" to use Redis TIME
-- Output: now ms, now µs
local function clockNow(given)
  local ms = tonumber(given)
  if ms then return ms, ms * 1000 end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end
