-- lane-submit-2.lua: claims into an event's ordered lane (src/ports/claim-lane.ts), in the order given
-- (claims that reach an origin together share one call). For each: its answer is kept as pending, then
-- the claim is appended to the lane's stream, so that a claim in the lane always has an answer to poll
-- and an answer is never pending for a claim that is not in the lane.
-- Input:
--   KEYS[1] claims  stream  the lane: entries with one field j = the entry's JSON
--   KEYS[2] a:      prefix of the answers: <prefix><claim id> = the answer's JSON (lane-settle-2.lua)
--   ARGV[1] how long an answer is kept, ms
--   ARGV[2..] for each claim: its id, the pending answer's JSON, the entry's JSON
-- Output: the entries' stream ids, in order
-- The answers' keys are named from the declared prefix, so they carry the lane's hash tag.
local ids = {}
for i = 2, #ARGV, 3 do
  redis.call('SET', KEYS[2] .. ARGV[i], ARGV[i + 1], 'PX', ARGV[1])
  ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', 'j', ARGV[i + 2])
end
return ids
