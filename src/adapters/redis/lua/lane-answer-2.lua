-- lane-answer-2.lua: a polled lane claim's answer (GET /events/:event/claims/:id): the allocator's, if
-- it gave one, else the pending record. Only a claim kept as pending (lane-pending-2.lua, a 202) can be
-- polled: its record names the lane entry it came in, whose answers the allocator keeps by claim id.
-- Input:
--   KEYS[1] a:<claim>  string  the claim kept as pending: JSON {claim, holder, status: "pending", entry}
--   KEYS[2] e:         prefix of the entries' answers: <prefix><entry id> = hash, claim id -> answer JSON
--   ARGV[1] the claim's id
-- Output: the answer's JSON, the pending record's, or false when the claim is not known
-- The entry's key is named from the declared prefix, so it carries the lane's hash tag.
local pending = redis.call('GET', KEYS[1])
if not pending then return false end
local entry = cjson.decode(pending)['entry']
if type(entry) ~= 'string' then return pending end
local answer = redis.call('HGET', KEYS[2] .. entry, ARGV[1])
if answer then return answer end
return pending
