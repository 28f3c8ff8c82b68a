-- lane-answer-2.lua: a lane claim's answer, for a request that stopped waiting (src/booking/lane/client.ts)
-- and for its polls (GET /events/:event/claims/:id?entry=...): the allocator's answer, kept with the
-- claim's entry (lane-settle-2.lua); else pending while the claim is still in that entry of the lane;
-- else nothing (no such claim there, or its answer was forgotten). Nothing is written.
-- Input:
--   KEYS[1] claims     stream  the lane
--   KEYS[2] e:<entry>  hash    the allocator's answers to the entry's claims: claim id -> answer JSON
--   ARGV[1] the claim's id
--   ARGV[2] the entry's id (the one its submission returned)
-- Output: the answer's JSON, {"claim","holder","status":"pending"} as JSON, or false
local answer = redis.call('HGET', KEYS[2], ARGV[1])
if answer then return answer end
local found = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
if #found == 0 then return false end
local fields = found[1][2]
for i = 1, #fields - 1, 2 do
  if fields[i] == 'j' then
    local ok, entry = pcall(cjson.decode, fields[i + 1])
    if not ok or type(entry) ~= 'table' then return false end
    local claims = entry['c']
    -- One claim an entry: what the lane's previous version appended.
    if entry['k'] == 'claim' then claims = { claims } elseif entry['k'] ~= 'claims' then return false end
    for _, claim in ipairs(claims) do
      if type(claim) == 'table' and claim['id'] == ARGV[1] then
        return cjson.encode({ claim = claim['id'], holder = claim['holder'], status = 'pending' })
      end
    end
  end
end
return false
