// The ClaimGate contract on the memory gate and on Redis (a Cluster in redis-extras.test.ts), and the
// gate's keys in Redis.
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { gateKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { claimGateContract } from './contract/claim-gate.js'
import { redisClients } from './support/redis-clients.js'
import { startRedis } from './support/redis-server.js'

const redis = redisClients()

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

describe('claims that arrive together', () => {
  it('share one EVALSHA, and are decided in the order they came', async () => {
    // A redis-server of its own: its command counts are this test's alone.
    const server = await startRedis()
    const client = new Redis(server.url)
    try {
      const gate = new RedisClaimGate(client, luaScripts())
      const event = 'together'
      await gate.reconcile(event, { units: [{ unit: 'item:ga', capacity: 150, sold: 0 }], holds: [] }, 1000, 1_800_000_000_000)
      await gate.claim({ event, hold: 'warm', units: [{ unit: 'item:ga', quantity: 1 }], ttlMs: 1000, now: 1_800_000_000_000 })
      const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0)
      const before = await calls()
      const answers = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          gate.claim({ event, hold: `c${i}`, units: [{ unit: 'item:ga', quantity: 1 }], ttlMs: 60_000, now: 1_800_000_000_000 }),
        ),
      )
      // 300 claims in five calls, sent as they filled (16, 32, 64, 128) and the 60 left at the turn's
      // end (turn-batches.ts); the first 149 after the warm-up won, in order.
      expect((await calls()) - before).toBe(5)
      expect(answers.map((a) => a.kind)).toEqual([...Array(149).fill('pass'), ...Array(151).fill('gone')])
    } finally {
      client.disconnect()
      await server.stop()
    }
  })
})

describe('a refusal in a sold-out event', () => {
  it('offers the nearest free seats while there are any, and looks none up once nothing is left', async () => {
    // A redis-server of its own: its command counts are this test's alone.
    const server = await startRedis()
    const client = new Redis(server.url)
    try {
      const gate = new RedisClaimGate(client, luaScripts())
      const event = 'soldout'
      const now = 1_800_000_000_000
      const seats = [
        { unit: 'seat:A1', capacity: 1, sold: 0 },
        { unit: 'seat:A2', capacity: 1, sold: 0 },
      ]
      await gate.reconcile(event, { units: seats, holds: [] }, 1000, now)
      const hmgets = async () => Number(/cmdstat_hmget:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0)
      const claimA1 = (hold: string) =>
        gate.claim({ event, hold, units: [{ unit: 'seat:A1', quantity: 1 }], ttlMs: 60_000, now, candidates: ['seat:A2'], nearest: 4 })
      expect(await claimA1('first')).toEqual({ kind: 'pass' })
      // A2 is still free: the refusal reads the units asked for, then the candidates, and offers A2.
      let before = await hmgets()
      expect(await claimA1('second')).toEqual({ kind: 'gone', gone: [{ unit: 'seat:A1', left: 0 }], nearest: ['seat:A2'] })
      expect((await hmgets()) - before).toBe(2)
      await gate.claim({ event, hold: 'last', units: [{ unit: 'seat:A2', quantity: 1 }], ttlMs: 60_000, now })
      // Nothing is left: the same refusal, with no candidates read.
      before = await hmgets()
      expect(await claimA1('third')).toEqual({ kind: 'gone', gone: [{ unit: 'seat:A1', left: 0 }], nearest: [] })
      expect((await hmgets()) - before).toBe(1)
      // Within one call too: a claim that takes the last seat leaves the next one nothing to look up.
      await gate.release(event, 'last', now)
      before = await hmgets()
      const [takesLast, refused] = await Promise.all([
        gate.claim({ event, hold: 'again', units: [{ unit: 'seat:A2', quantity: 1 }], ttlMs: 60_000, now }),
        claimA1('fourth'),
      ])
      expect(takesLast).toEqual({ kind: 'pass' })
      expect(refused).toEqual({ kind: 'gone', gone: [{ unit: 'seat:A1', left: 0 }], nearest: [] })
      expect((await hmgets()) - before).toBe(2)
    } finally {
      client.disconnect()
      await server.stop()
    }
  })
})
