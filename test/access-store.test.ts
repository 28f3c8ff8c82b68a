// The AccessStore contract on the memory store, a real redis-server and a Redis Cluster; the access
// keys in Redis: one hash tag per room, the wrong tries' minute hashes kept two minutes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryAccessStore } from '../src/adapters/memory/access-store.js'
import { RedisAccessStore } from '../src/adapters/redis/access-store.js'
import { accessKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { accessStoreContract } from './contract/access-store.js'
import { redisClients } from './support/redis-clients.js'
import { startSingleNodeCluster, type TestCluster } from './support/redis-cluster.js'

const redis = redisClients()
let cluster: TestCluster

beforeAll(async () => {
  cluster = await startSingleNodeCluster()
})
afterAll(async () => {
  await cluster?.stop()
})

accessStoreContract('memory', async () => new MemoryAccessStore())
accessStoreContract('redis', async () => new RedisAccessStore(redis(), luaScripts()))
accessStoreContract('redis cluster', async () => new RedisAccessStore(cluster.cluster, luaScripts()))

describe('the access keys in Redis', () => {
  it('carry the room’s hash tag; a minute’s wrong tries are kept two minutes', async () => {
    const client = redis()
    const store = new RedisAccessStore(client, luaScripts())
    const room = `keys-${Date.now().toString(36)}`
    const now = 1_800_000_000_000
    const terms = {
      id: 'a0000000000k',
      kind: 'code' as const,
      lane: 'priority' as const,
      label: '',
      maxUses: 1,
      expiresAt: now + 60_000,
      createdAt: now,
      createdBy: 'admin',
      hint: 'WXYZ',
    }
    await store.create(room, [{ terms, digest: 'the-digest' }])
    await store.redeem({ room, by: { code: 'no-such' }, visitor: 'v000000000000001', network: '10.0.0.0/24', triesPerMinute: 5, now })
    await store.redeem({ room, by: { code: 'the-digest' }, visitor: 'v000000000000001', network: '10.0.0.0/24', triesPerMinute: 5, now })
    const keys = (await client.keys(`*{${room}}*`)).sort()
    const k = accessKeys(room)
    const minute = Math.floor(now / 60_000)
    expect(keys).toEqual([k.codes, `${k.failures}${minute}`, k.grants, k.last, k.order, k.made, k.redeemed, k.used].sort())
    for (const key of keys) expect(key.startsWith(`anteroom:{${room}}:acc:`)).toBe(true)
    expect(await client.hgetall(k.codes)).toEqual({ 'the-digest': terms.id })
    const ttl = await client.pttl(`${k.failures}${minute}`)
    expect(ttl).toBeGreaterThan(110_000)
    expect(ttl).toBeLessThanOrEqual(120_000)
  })
})
