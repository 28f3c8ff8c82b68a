-- lib/gate.lua (included): the claim gate's shared steps (src/ports/claim-gate.ts), the same as
-- src/adapters/memory/claim-gate.ts. An event's keys, in this order in every gate script:
--   KEYS[1] left:  hash unit -> quantity left to claim ("seat:A1" -> 0 or 1, "item:night-12" -> n)
--   KEYS[2] holds: sorted set hold id -> expiry ms (holds the gate has marked and not yet sold)
--   KEYS[3] units: hash hold id -> JSON {"b": marked at ms, "u": [unit, quantity, unit, quantity, ...]}
--   KEYS[4] meta:  hash free, held, sold (quantities), reconciledAt (ms; its absence: the gate knows no stock)
local LAPSE_BATCH = 64 -- LAPSE_BATCH: most lapsed holds one call gives back

-- Gives one hold's units back; returns false if the gate did not have it.
local function giveBack(hold)
  local json = redis.call('HGET', KEYS[3], hold)
  if not json then return false end
  local u = cjson.decode(json).u
  local total = 0
  for i = 1, #u, 2 do
    redis.call('HINCRBY', KEYS[1], u[i], u[i + 1])
    total = total + u[i + 1]
  end
  redis.call('HINCRBY', KEYS[4], 'held', -total)
  redis.call('HINCRBY', KEYS[4], 'free', total)
  redis.call('ZREM', KEYS[2], hold)
  redis.call('HDEL', KEYS[3], hold)
  return true
end

-- Gives back the units of holds whose time ran out, at most LAPSE_BATCH, earliest first.
local function lapse(now)
  local due = redis.call('ZRANGE', KEYS[2], '-inf', now, 'BYSCORE', 'LIMIT', 0, LAPSE_BATCH)
  for _, hold in ipairs(due) do giveBack(hold) end
end
