-- lib/rule.lua (included): the admission rule's constants, the same as in src/core/admission.ts.
local MAX_STEP = 500 -- MAX_STEP: most visitors one call admits
local BUCKETS = 16384 -- SEEN_BUCKETS: seen buckets of a room
local MAX_SWEEP = 16 -- MAX_SWEEP: most seen buckets one call checks
local CATCH_UP_US = 1000000 -- CATCH_UP_US: how far an unpolled room catches up on its pace
local ENDED_KEEP_MS = 86400000 -- ENDED_KEEP_MS: how long an admin's "end session" keeps a visitor out
local MAX_EXTEND = 10000 -- MAX_EXTEND: most admissions one call extends when it first hears of an outage
local DRAW_SPAN_US = 1099511627776 -- DRAW_SPAN_US (core/draw.ts): drawn arrivals lie this far before the opening, 2^40
local DRAWN_KEEP_MS = 604800000 -- DRAWN_KEEP_MS: how long a room's draw is kept after its opening

-- seenBucketOf: a visitor's seen bucket. Four bytes per string.byte, and the remainder taken once
-- for them: the same number (h * 31^4 + ... stays below 2^53), in under half the time.
local function bucketOf(visitor)
  local h, n, i = 0, #visitor, 1
  while i + 3 <= n do
    local a, b, c, d = string.byte(visitor, i, i + 3)
    h = ((((h * 31 + a) * 31 + b) * 31 + c) * 31 + d) % BUCKETS
    i = i + 4
  end
  for j = i, n do h = (h * 31 + string.byte(visitor, j)) % BUCKETS end
  return h
end
