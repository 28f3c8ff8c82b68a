-- lib/rule.lua (included): the admission rule's constants and windows, written from src/core/admission.ts
-- by `npm run build:lua` (scripts/build-lua.ts) where the next line stands.
-- #rule-constants

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
