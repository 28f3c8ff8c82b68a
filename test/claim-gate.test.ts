// The ClaimGate contract on the memory gate and on Redis (a Cluster in redis-extras.test.ts), and the
// gate's keys in Redis.
import { Redis } from 'ioredis'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { gateKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { claimGateContract } from './contract/claim-gate.js'

const clients: Redis[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})
const redis = () => {
  const client = new Redis(inject('redisUrl'))
  clients.push(client)
  return client
}

claimGateContract('memory', async () => new MemoryClaimGate())
claimGateContract('redis', async () => new RedisClaimGate(redis(), luaScripts()))

describe('the claim gate in Redis', () => {
  it("keeps an event's stock in four keys that share the event's hash tag", async () => {
    const client = redis()
    const gate = new RedisClaimGate(client, luaScripts())
    const event = `keys-${Date.now().toString(36)}`
    await gate.reconcile(event, { units: [{ unit: 'seat:A1', capacity: 1, sold: 0 }], holds: [] }, 1000, 1_800_000_000_000)
    await gate.claim({ event, hold: 'h', units: [{ unit: 'seat:A1', quantity: 1 }], ttlMs: 1000, now: 1_800_000_000_000 })
    const keys = (await client.keys(`*${event}*`)).sort()
    expect(keys).toEqual([...gateKeys(event)].sort())
    for (const key of keys) expect(key).toContain(`{gate:${event}}`)
  })
})
