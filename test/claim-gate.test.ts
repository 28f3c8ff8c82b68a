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

/**
 * A gate on a redis-server of its own, so that its command counts are the test's alone: `calls(name)`
 * reads how many times Redis ran a command (scripts' own calls included).
 */
async function withOwnGate(run: (gate: RedisClaimGate, calls: (command: string) => Promise<number>) => Promise<void>) {
  const server = await startRedis()
  const client = new Redis(server.url)
  const calls = async (command: string) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await client.info('commandstats'))?.[1] ?? 0)
  try {
    await run(new RedisClaimGate(client, luaScripts()), calls)
  } finally {
    client.disconnect()
    await server.stop()
  }
}

describe('claims that arrive together', () => {
  it('share one EVALSHA, and are decided in the order they came', async () => {
    await withOwnGate(async (gate, calls) => {
      const event = 'together'
      await gate.reconcile(event, { units: [{ unit: 'item:ga', capacity: 150, sold: 0 }], holds: [] }, 1000, 1_800_000_000_000)
      await gate.claim({ event, hold: 'warm', units: [{ unit: 'item:ga', quantity: 1 }], ttlMs: 1000, now: 1_800_000_000_000 })
      const before = await calls('evalsha')
      const answers = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          gate.claim({ event, hold: `c${i}`, units: [{ unit: 'item:ga', quantity: 1 }], ttlMs: 60_000, now: 1_800_000_000_000 }),
        ),
      )
      // 300 claims in five calls, sent as they filled (16, 32, 64, 128) and the 60 left at the turn's
      // end (turn-batches.ts); the first 149 after the warm-up won, in order.
      expect((await calls('evalsha')) - before).toBe(5)
      expect(answers.map((a) => a.kind)).toEqual([...Array(149).fill('pass'), ...Array(151).fill('gone')])
    })
  })
})

describe('a refusal in a sold-out event', () => {
  it('offers the nearest free seats while there are any, and looks none up once nothing is left', async () => {
    await withOwnGate(async (gate, calls) => {
      const event = 'soldout'
      const now = 1_800_000_000_000
      const seats = [
        { unit: 'seat:A1', capacity: 1, sold: 0 },
        { unit: 'seat:A2', capacity: 1, sold: 0 },
      ]
      await gate.reconcile(event, { units: seats, holds: [] }, 1000, now)
      const hmgets = () => calls('hmget')
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
    })
  })
})
