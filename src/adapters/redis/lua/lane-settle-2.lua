-- lane-settle-2.lua: the allocator's answers to a batch of a lane's entries, in one step: the answers
-- are kept by entry (for polls), all are published (to the waiting requests), the entries are
-- acknowledged, and the stream is trimmed of entries that every consumer has acknowledged. A crash
-- before this step leaves the batch pending: the next allocator decides it again (anteroom_claim_batch
-- answers a written claim again; a claim already answered here is not decided again).
-- Input:
--   KEYS[1] claims  stream  the lane
--   KEYS[2] e:      prefix of the entries' answers: <prefix><entry id> = hash, claim id -> answer JSON
--   ARGV[1] the consumer group
--   ARGV[2] the channel the answers are published on
--   ARGV[3] how long answers are kept, ms (from an entry's last answer)
--   ARGV[4] the newest entry of the batch: entries up to it have all been delivered
--   ARGV[5] n, the number of answers; then n triples entry id, claim id, answer JSON (an entry's answers
--           one after another); then the entry ids to acknowledge
-- Output: how many entries were acknowledged
-- The entries' keys are named from the declared prefix, so they carry the lane's hash tag.
local n = tonumber(ARGV[5])
local published = {}
-- One HSET for each run of answers to the same entry (at most 2 x 128 fields: an entry holds at most
-- MAX_BATCH claims, src/adapters/redis/turn-batches.ts, well under what unpack takes).
local function store(entry, fields)
  local key = KEYS[2] .. entry
  redis.call('HSET', key, unpack(fields))
  redis.call('PEXPIRE', key, ARGV[3])
end
local entry, fields = nil, {}
for i = 0, n - 1 do
  local e, claim, answer = ARGV[6 + 3 * i], ARGV[7 + 3 * i], ARGV[8 + 3 * i]
  if e ~= entry and entry ~= nil then
    store(entry, fields)
    fields = {}
  end
  entry = e
  fields[#fields + 1] = claim
  fields[#fields + 1] = answer
  published[#published + 1] = answer
end
if entry ~= nil then store(entry, fields) end
if n > 0 then redis.call('PUBLISH', ARGV[2], '[' .. table.concat(published, ',') .. ']') end
local acked = 0
local first = 6 + 3 * n
if #ARGV >= first then acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, first)) end

-- Stream ids "ms-seq" in order.
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
-- Everything before the oldest pending entry (or up to the batch's newest, when none is pending) was
-- delivered and acknowledged: it goes.
local ms, seq = string.match(ARGV[4], '^(%d+)-(%d+)$')
local keep = string.format('%d-%d', tonumber(ms), tonumber(seq) + 1)
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
if tonumber(pending[1]) > 0 and before(pending[2], keep) then keep = pending[2] end
redis.call('XTRIM', KEYS[1], 'MINID', keep)
return acked
