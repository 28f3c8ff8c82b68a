-- lib/limits.lua (included): a room's admission limits, passed as one JSON argument by name
-- (AdmissionLimits in src/core/settings.ts), so a new setting adds a field instead of renumbering
-- every argument.
-- Input:  json  {"mode": "fifo"|"paused"|"passthrough", "totalActiveUsers": n, "newUsersPerMinute": n,
--                "abandonAfterMs": n, "sessionMs": n}
-- Output: the table, with the numbers checked
local function decodeLimits(json)
  local limits = cjson.decode(json)
  for _, name in ipairs({ 'totalActiveUsers', 'newUsersPerMinute', 'abandonAfterMs', 'sessionMs' }) do
    if type(limits[name]) ~= 'number' then return redis.error_reply('limits.' .. name .. ' must be a number') end
  end
  return limits
end
