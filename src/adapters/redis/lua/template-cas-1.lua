-- template-cas-1.lua: writes or removes one page template only if nobody changed it since the caller
-- read it (compare-and-set on its revision), so two admins never overwrite each other. A name's
-- revision only grows: it is kept beside the template and outlives its removal.
-- Input:
--   KEYS[1] templates  hash  <name> -> {"rev": n, "template": {...}}; rev:<name> -> n
--   ARGV[1] name
--   ARGV[2] the revision the caller read (0: the template must not exist)
--   ARGV[3] the new template, JSON, or "" to remove it
-- Output: { 1, new revision } on success; { 0, current JSON or "" } when the revision was stale (or
--   a removal found no template)
local current = redis.call('HGET', KEYS[1], ARGV[1])
local rev = 0
if current then rev = tonumber(cjson.decode(current).rev) or 0 end
if rev ~= tonumber(ARGV[2]) or (ARGV[3] == '' and not current) then return { 0, current or '' } end
local next = (tonumber(redis.call('HGET', KEYS[1], 'rev:' .. ARGV[1])) or rev) + 1
redis.call('HSET', KEYS[1], 'rev:' .. ARGV[1], next)
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], '{"rev":' .. next .. ',"template":' .. ARGV[3] .. '}')
end
return { 1, next }
