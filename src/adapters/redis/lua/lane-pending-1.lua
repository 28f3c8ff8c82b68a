-- lane-pending-1.lua: a lane claim whose request stops waiting (src/booking/lane/client.ts) is kept as
-- pending for its polls, unless the allocator answered it meanwhile: then that answer is returned and
-- nothing is written. The allocator's answer (lane-settle-2.lua) overwrites a pending one, whenever it
-- comes, so a polled claim is never left pending once decided.
-- Input:
--   KEYS[1] a:<claim>  string  the claim's answer (JSON)
--   ARGV[1] the pending answer's JSON
--   ARGV[2] how long it is kept, ms
-- Output: the answer already there (JSON), or false when the pending one was written
local answer = redis.call('GET', KEYS[1])
if answer then return answer end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
