import { type Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { roomKeys, SEEN_BUCKETS, seenBucketOf } from '../src/adapters/redis/keys.js'
import { luaFromFiles } from '../src/adapters/redis/lua-files.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { queueStoreContract } from './contract/queue-store.js'
import { startSingleNodeCluster, type TestCluster } from './support/redis-cluster.js'

const limits = { mode: 'paused', totalActiveUsers: 10, newUsersPerMinute: 10, abandonAfterMs: 60_000, sessionMs: 600_000 } as const
let redis: Redis

beforeAll(() => {
  redis = new Redis(inject('redisUrl'))
})
afterAll(() => redis.disconnect())

describe('Redis scripts', () => {
  it('each script SHA is known ahead and matches what Redis computes', async () => {
    for (const script of Object.values(luaFromFiles())) {
      expect(await redis.script('LOAD', script.source)).toBe(script.sha)
      expect(script.source.split('\n')[0]).toMatch(new RegExp(`^-- ${script.name}: `))
    }
  })

  it('falls back to EVAL when Redis has no scripts cached', async () => {
    await redis.script('FLUSH')
    const store = new RedisQueueStore(redis, luaFromFiles())
    const r = await store.poll({ room: 'noscript', visitor: 'AAAAAAAAAAAAAAAA', limits })
    expect(r.state).toBe('paused')
  })

  it('uses Redis TIME when no time is given, so edge clocks cannot reorder the line', async () => {
    const store = new RedisQueueStore(redis, luaFromFiles())
    const [s1, us1] = await redis.time()
    const r = await store.poll({ room: 'redis-time', visitor: 'BBBBBBBBBBBBBBBB', limits })
    const [s2, us2] = await redis.time()
    const before = Number(s1) * 1e6 + Number(us1)
    const after = Number(s2) * 1e6 + Number(us2)
    expect(r.arrival).toBeGreaterThanOrEqual(before)
    expect(r.arrival).toBeLessThanOrEqual(after)
    expect(r.now).toBeGreaterThanOrEqual(Math.floor(before / 1000))
    expect(r.now).toBeLessThanOrEqual(Math.ceil(after / 1000))
  })

  it('every key of a room carries the room hash tag', async () => {
    const store = new RedisQueueStore(redis, luaFromFiles())
    const room = 'tagged'
    await store.poll({ room, visitor: 'CCCCCCCCCCCCCCCC', limits: { ...limits, mode: 'fifo' } })
    await store.endSession(room, 'CCCCCCCCCCCCCCCC')
    await store.poll({ room, visitor: 'DDDDDDDDDDDDDDDD', limits })
    const keys = await redis.keys(`*${room}*`)
    expect(keys.length).toBeGreaterThanOrEqual(5)
    for (const key of keys) expect(key.startsWith(`anteroom:{${room}}:`)).toBe(true)
    for (const key of Object.values(roomKeys(room))) expect(key).toContain(`{${room}}`)
  })
})

describe('seen buckets', () => {
  it('the script and keys.ts put a visitor in the same bucket, and buckets stay compact listpacks', async () => {
    const store = new RedisQueueStore(redis, luaFromFiles())
    const room = 'buckets'
    const k = roomKeys(room)
    const visitors = Array.from({ length: 3000 }, (_, i) => `w${String(i).padStart(15, '0')}`)
    await Promise.all(visitors.map((visitor) => store.poll({ room, visitor, limits })))
    for (const v of visitors.slice(0, 50)) expect(await redis.hexists(`${k.seenPrefix}${seenBucketOf(v)}`, v)).toBe(1)
    const keys = await redis.keys(`${k.seenPrefix}*`)
    let entries = 0
    for (const key of keys) {
      entries += await redis.hlen(key)
      expect(await redis.object('ENCODING', key)).toBe('listpack')
      expect(Number(key.slice(k.seenPrefix.length))).toBeLessThan(SEEN_BUCKETS)
    }
    expect(entries).toBe(visitors.length)
    expect(await redis.zcard(k.sweep)).toBe(keys.length)
  })
})

describe('on a Redis Cluster', () => {
  let started: TestCluster
  let cluster: Cluster
  beforeAll(async () => {
    started = await startSingleNodeCluster()
    cluster = started.cluster
  })
  afterAll(async () => {
    await started.stop()
  })

  queueStoreContract('redis cluster', async () => ({
    store: new RedisQueueStore(cluster, luaFromFiles()),
    async forget() {
      const keys = await cluster.keys('anteroom:{c*')
      for (const key of keys) await cluster.del(key)
    },
  }))
})
