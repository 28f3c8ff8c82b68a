-- lane-pending-2.lua: a lane claim whose request stops waiting (src/booking/lane/client.ts) is kept as
-- pending for its polls, with the lane entry it came in, unless the allocator answered it meanwhile:
-- then that answer is returned and nothing is written. The allocator keeps its answers by entry
-- (lane-settle-2.lua), so a poll finds the answer from the pending record whenever it comes.
-- Input:
--   KEYS[1] a:<claim>  string  the claim kept as pending: JSON {claim, holder, status: "pending", entry}
--   KEYS[2] e:<entry>  hash    the allocator's answers to the entry's claims: claim id -> answer JSON
--   ARGV[1] the claim's id
--   ARGV[2] the pending record's JSON
--   ARGV[3] how long it is kept, ms
-- Output: the allocator's answer (JSON), or false when the pending record was written
local answer = redis.call('HGET', KEYS[2], ARGV[1])
if answer then return answer end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return false
