-- lane-submit-2.lua: one claim into an event's ordered lane (src/ports/claim-lane.ts): its answer is
-- kept as pending, then the claim is appended to the lane's stream, in one step, so that a claim in the
-- lane always has an answer to poll and an answer is never pending for a claim that is not in the lane.
-- Input:
--   KEYS[1] claims  stream  the lane: entries with one field j = the entry's JSON
--   KEYS[2] a:      prefix of the answers: <prefix><claim id> = the answer's JSON (lane-settle-2.lua)
--   ARGV[1] the claim's id
--   ARGV[2] the pending answer's JSON
--   ARGV[3] how long an answer is kept, ms
--   ARGV[4] the entry's JSON
-- Output: the entry's stream id
-- The answer's key is named from the declared prefix, so it carries the lane's hash tag.
redis.call('SET', KEYS[2] .. ARGV[1], ARGV[2], 'PX', ARGV[3])
return redis.call('XADD', KEYS[1], '*', 'j', ARGV[4])
