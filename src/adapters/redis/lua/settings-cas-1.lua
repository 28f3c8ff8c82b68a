-- settings-cas-1.lua: replaces one room's settings only if nobody changed them since the caller
-- read them (compare-and-set on the revision), so two admins never overwrite each other.
-- Input:
--   KEYS[1] settings  hash  room id -> {"rev": n, "settings": {...}}
--   ARGV[1] room id
--   ARGV[2] the revision the caller read (0: the room must not exist yet)
--   ARGV[3] the new settings, JSON
-- Output: { 1, new revision } on success; { 0, current JSON or "" } when the revision was stale
local current = redis.call('HGET', KEYS[1], ARGV[1])
local rev = 0
if current then rev = tonumber(cjson.decode(current).rev) or 0 end
if rev ~= tonumber(ARGV[2]) then return { 0, current or '' } end
local next = rev + 1
redis.call('HSET', KEYS[1], ARGV[1], '{"rev":' .. next .. ',"settings":' .. ARGV[3] .. '}')
return { 1, next }
